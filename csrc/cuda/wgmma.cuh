// Hopper warpgroup MMA (wgmma) helpers: shared-memory matrix descriptors, the
// fence / commit / wait protocol, the m64n256 and m64n128 MMAs used by the forwards (also by
// element type: mma<T, N>), and the
// m64n64 MMAs with B MN-major and the 8 x 8 transposes used by backward_grad_weight_wgmma.cu.
// sm_90a only: callers compile these under CONVT_SM90A_DEVICE.
//
// Operands in shared memory use the no-swizzle ("interleave") K-major layout: a core
// matrix is 8 rows (M or N index) x 16 bytes (4 tf32 or 8 bf16/fp16 K values), its 8
// rows stored contiguously (128 bytes). A descriptor gives the start address and two
// strides (PTX ISA, "Matrix Descriptor Format"):
//   leading byte offset (LBO): from one core matrix to the next along K;
//   stride byte offset  (SBO): from one 8-row group to the next along M (or N).
// Every operand here is stored [K quantum of 16 bytes][row][16 bytes], so SBO = 128 and
// LBO = rows_per_quantum_plane * 16; any row can start an operand (16-byte granularity),
// which is what lets one staged input tile serve every tap as a shifted view.
// MN-major (transposed) operands, no swizzle: a core matrix is 8 K rows x 16 bytes (8 MN
// values), rows contiguous; LBO = from one 8-row K group to the next, SBO = from one 8-value
// MN group to the next (PTX ISA canonical layout ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))).
//
// Accumulator layout of m64nN (fp32), per thread of the warpgroup: warp w (0..3) of the
// group holds rows 16w..16w+15; with g = lane/4, t = lane%4, for each 8-column block j:
//   d[4j+0] = D[16w+g][8j+2t]     d[4j+1] = D[16w+g][8j+2t+1]
//   d[4j+2] = D[16w+g+8][8j+2t]   d[4j+3] = D[16w+g+8][8j+2t+1]
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <type_traits>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CONVT_SM90A_DEVICE 1
#endif

namespace convt {
namespace wgmma {

// Shared-memory matrix descriptor, no swizzle. Addresses and offsets in bytes (16-byte
// multiples, below 256 KiB).
__device__ __forceinline__ uint64_t make_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((smem_addr >> 4) & 0x3FFF) |
         (static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32);
}

// Shared-memory matrix descriptor for a swizzled layout that a tensor map wrote (swizzle mode
// of the same width): rows of 32 / 64 / 128 bytes, the pattern repeating every 8 rows.
//  - MN-major, 128-byte rows (64 16-bit MN values per K row): canonical layout
//    ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)): SBO = 1024 (8 K rows), LBO = from one 64-value MN
//    atom to the next (unused at M or N = 64).
//  - K-major, 32-byte rows (one k16 step of 16-bit values, k8 of tf32 per M or N row):
//    ((8,m),(T,2)):((2T,SBO),(1,T)): SBO = 256 (8 rows); LBO unused.
// The start address may be any 16-byte multiple (an operand may start at any row of a swizzled
// tile) with the base offset (bits 49-51) left 0: the hardware swizzles the absolute address,
// as the copy engine does (run LD: a base offset of (start >> 7) & 7 gave wrong sums). The
// tile must start on the pattern's repeat (8 rows) for the two to agree.
enum class Swizzle : uint64_t { k128 = 1, k64 = 2, k32 = 3 };  // the layout type, bits 62-63
__device__ __forceinline__ uint64_t make_desc_swizzled(uint32_t smem_addr, uint32_t lbo, uint32_t sbo, Swizzle mode) {
  return make_desc(smem_addr, lbo, sbo) | (static_cast<uint64_t>(mode) << 62);
}

// The start address is the low 14 bits: moving an operand by `bytes` (16-byte multiple,
// staying below 256 KiB) is an add.
__device__ __forceinline__ uint64_t advance(uint64_t desc, uint32_t bytes) {
  return desc + (bytes >> 4);
}

// `desc` with its low word replaced by `lo`: the descriptor of an operand moved along shared
// memory, where `lo` is the low word of `desc` plus the move in 16-byte units (a 32-bit add; the
// tap loops of the wgmma forwards build their descriptors so, see forward_wgmma.cu for what
// ptxas made of wgmma::advance's 64-bit add there). Exact: the start-address field is bits 0-13
// of the low word, in 16-byte units, and every operand starts inside the block's shared memory,
// whose addresses are below 228 KiB (the SM's shared memory, static and reserved included):
// (address >> 4) < 14592 < 2^14, so the sum never carries out of the field into bits 14-15
// (zero) or the leading byte offset at bit 16. Same descriptors, bit for bit, as advance (whose
// 64-bit sum differs only on a carry out of the low word, impossible here) and as make_desc of
// the moved address. Callers keep their shared memory below 256 KiB (a static_assert each).
__host__ __device__ __forceinline__ uint64_t desc_lo(uint64_t desc, uint32_t lo) {
  return (desc & 0xFFFFFFFF00000000ull) | lo;
}

#ifdef CONVT_SM90A_DEVICE
// Orders this thread's earlier register accesses of the accumulators before the next wgmma.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Makes this thread's generic-proxy shared-memory writes (st.shared, cp.async) visible
// to the async proxy that wgmma reads through; then a barrier publishes them.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving accumulator reads across wait() (the registers are
// written asynchronously; nothing else ties them to the wait).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// The accumulator operands of the MMA asm bodies below, four / 32 at a time.
#define CONVT_ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define CONVT_ACC32(i)                                                                   \
  CONVT_ACC4(i), CONVT_ACC4(i + 4), CONVT_ACC4(i + 8), CONVT_ACC4(i + 12), CONVT_ACC4(i + 16), \
      CONVT_ACC4(i + 20), CONVT_ACC4(i + 24), CONVT_ACC4(i + 28)

// d (+)= A * B, A = m64 x k from a_desc, B = k x n256 from b_desc, both K-major.
// N = 256 rather than two N = 128 products: A is read from shared memory once instead of
// twice (measured 2-4% faster forward on every suite shape, docs/perf-notes-forward.md).
// The three element types differ only in the instruction's shape and type suffix (16-bit
// types take two more immediates: no transpose of A or B); one asm body serves them all.
// %0..%127: the accumulators, %128 / %129: the descriptors, %130: accumulate (not zero).
#define CONVT_WGMMA_M64N256(INSTR, TAIL) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" INSTR \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1" TAIL ";\n}\n" \
               : CONVT_ACC32(0), CONVT_ACC32(32), CONVT_ACC32(64), CONVT_ACC32(96) \
               : "l"(a_desc), "l"(b_desc), "r"(1))

__device__ __forceinline__ void m64n256k8_tf32(float (&d)[128], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", "");
}

__device__ __forceinline__ void m64n256k16_bf16(float (&d)[128], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", ", 0, 0");
}

__device__ __forceinline__ void m64n256k16_f16(float (&d)[128], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", ", 0, 0");
}
#undef CONVT_WGMMA_M64N256

// d (+)= A * B, A = m64 x k from a_desc, B = k x n128 from b_desc, both K-major: half of the
// m64n256 product, for warpgroups of 128 pixels (64 accumulator registers per thread
// instead of 128: blocks of four such warpgroups, or two with two blocks per multiprocessor).
// A is read once per 128 pixels instead of once per 256.
// %0..%63: the accumulators, %64 / %65: the descriptors, %66: accumulate (not zero).
#define CONVT_WGMMA_M64N128(INSTR, TAIL) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" INSTR \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1" TAIL ";\n}\n" \
               : CONVT_ACC32(0), CONVT_ACC32(32) \
               : "l"(a_desc), "l"(b_desc), "r"(1))

__device__ __forceinline__ void m64n128k8_tf32(float (&d)[64], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N128("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32", "");
}

__device__ __forceinline__ void m64n128k16_bf16(float (&d)[64], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N128("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", ", 0, 0");
}

__device__ __forceinline__ void m64n128k16_f16(float (&d)[64], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N128("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", ", 0, 0");
}
#undef CONVT_WGMMA_M64N128

// One K step of element type T: acc (+)= A (m64) * B (N = 256 or 128 columns), TF32 k8 for
// float, k16 for bfloat16 / float16. N / 2 accumulators per thread.
template <typename T, int N>
__device__ __forceinline__ void mma(float (&acc)[N / 2], uint64_t a, uint64_t b) {
  static_assert(N == 256 || N == 128, "one m64n256 or m64n128 product per warpgroup");
  if constexpr (N == 256) {
    if constexpr (std::is_same_v<T, float>) {
      m64n256k8_tf32(acc, a, b);
    } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
      m64n256k16_bf16(acc, a, b);
    } else {
      m64n256k16_f16(acc, a, b);
    }
  } else {
    if constexpr (std::is_same_v<T, float>) {
      m64n128k8_tf32(acc, a, b);
    } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
      m64n128k16_bf16(acc, a, b);
    } else {
      m64n128k16_f16(acc, a, b);
    }
  }
}

// acc (+)= A (m64) * B (the first N of 256 columns), into the first N / 2 of the 128
// accumulators of an m64n256 product (their layout: columns 8j .. 8j + 7 in acc[4j .. 4j + 3],
// the same for every N), the rest untouched: the warp-specialized forward's short tiles, whose
// valid slots end before 256, and its wide tiles' 32 columns past 256 (forward_wgmma_ws.cu).
// N = 128, 64 or 32.
#define CONVT_WGMMA_LO_N64(INSTR, TAIL) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" INSTR \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1" TAIL ";\n}\n" \
               : CONVT_ACC32(0) \
               : "l"(a_desc), "l"(b_desc), "r"(1))
#define CONVT_WGMMA_LO_N32(INSTR, TAIL) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n" INSTR \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1" TAIL ";\n}\n" \
               : CONVT_ACC4(0), CONVT_ACC4(4), CONVT_ACC4(8), CONVT_ACC4(12) \
               : "l"(a_desc), "l"(b_desc), "r"(1))
#define CONVT_WGMMA_LO_N128(INSTR, TAIL) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" INSTR \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1" TAIL ";\n}\n" \
               : CONVT_ACC32(0), CONVT_ACC32(32) \
               : "l"(a_desc), "l"(b_desc), "r"(1))
// One asm body per width, its instruction by element type: TF32 k8 for float, k16 for
// bfloat16 / float16 (two more immediates: no transposes).
#define CONVT_WGMMA_LO_BY_TYPE(BODY, SHAPE)                                                         \
  if constexpr (std::is_same_v<T, float>) {                                                         \
    BODY("wgmma.mma_async.sync.aligned." SHAPE "k8.f32.tf32.tf32", "");                             \
  } else if constexpr (std::is_same_v<T, c10::BFloat16>) {                                          \
    BODY("wgmma.mma_async.sync.aligned." SHAPE "k16.f32.bf16.bf16", ", 0, 0");                      \
  } else {                                                                                          \
    BODY("wgmma.mma_async.sync.aligned." SHAPE "k16.f32.f16.f16", ", 0, 0");                        \
  }
// NACC: the accumulator array's size, 128 (an m64n256 set) or at least N / 2 (the wide tiles'
// extra m64n32 product has 16 of its own).
template <typename T, int N, int NACC>
__device__ __forceinline__ void mma_lo(float (&d)[NACC], uint64_t a_desc, uint64_t b_desc) {
  static_assert(N == 128 || N == 64 || N == 32, "the narrow products of an m64n256 accumulator set");
  static_assert(NACC >= N / 2, "N / 2 accumulators per thread");
  if constexpr (N == 128) {
    CONVT_WGMMA_LO_BY_TYPE(CONVT_WGMMA_LO_N128, "m64n128")
  } else if constexpr (N == 64) {
    CONVT_WGMMA_LO_BY_TYPE(CONVT_WGMMA_LO_N64, "m64n64")
  } else {
    CONVT_WGMMA_LO_BY_TYPE(CONVT_WGMMA_LO_N32, "m64n32")
  }
}
#undef CONVT_WGMMA_LO_BY_TYPE
#undef CONVT_WGMMA_LO_N64
#undef CONVT_WGMMA_LO_N32
#undef CONVT_WGMMA_LO_N128

// d (+)= A * B, A = m64 x k16 from a_desc, B = k16 x n64 MN-major from b_desc (tnsp-b = 1:
// B's 8 N values of one K row are one 16-byte row of a core matrix); A K-major (`_tb`) or
// MN-major too (`_tab`, tnsp-a = 1). 16-bit types only (PTX allows the transposes for them
// alone). grad_weight (backward_grad_weight_wgmma.cu) keeps grad_output in this layout so
// that a shift along K (one column per tap) moves the operand's start by whole 16-byte rows;
// from channels_last operands both are MN-major as loaded.
// %0..%31: the accumulators, %32 / %33: the descriptors, %34: accumulate (not zero).
#define CONVT_WGMMA_M64N64(INSTR, TNSP) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" INSTR \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, " TNSP ";\n}\n" \
               : CONVT_ACC32(0) \
               : "l"(a_desc), "l"(b_desc), "r"(1))

__device__ __forceinline__ void m64n64k16_bf16_tb(float (&d)[32], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N64("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", "0, 1");
}
__device__ __forceinline__ void m64n64k16_f16_tb(float (&d)[32], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N64("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "0, 1");
}
__device__ __forceinline__ void m64n64k16_bf16_tab(float (&d)[32], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N64("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", "1, 1");
}
__device__ __forceinline__ void m64n64k16_f16_tab(float (&d)[32], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N64("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "1, 1");
}
// m64n32k16 with both operands MN-major (transposed A and B), 16 accumulators a thread: the
// m64n64 _tab products' half-width form, for tiles of at most 32 output channels
// (backward_grad_weight_ws.cu's narrow co tiles), where the upper 32 columns of an n64 product
// would multiply zeros.
#define CONVT_WGMMA_M64N32_TAB(INSTR) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n" INSTR \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 1, 1;\n}\n" \
               : CONVT_ACC4(0), CONVT_ACC4(4), CONVT_ACC4(8), CONVT_ACC4(12) \
               : "l"(a_desc), "l"(b_desc), "r"(1))
__device__ __forceinline__ void m64n32k16_bf16_tab(float (&d)[16], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N32_TAB("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16");
}
__device__ __forceinline__ void m64n32k16_f16_tab(float (&d)[16], uint64_t a_desc, uint64_t b_desc) {
  CONVT_WGMMA_M64N32_TAB("wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16");
}
#undef CONVT_WGMMA_M64N32_TAB
// d (+)= A * B, m64n64k8 TF32, A from registers (the mma.sync m16n8k8 A fragment per warp: warp
// w of the warpgroup holds rows 16w .. 16w + 15; with g = lane / 4, t = lane % 4: a[0] = A[g][t],
// a[1] = A[g + 8][t], a[2] = A[g][t + 4], a[3] = A[g + 8][t + 4], TF32 bit patterns), B K-major
// from b_desc. The float32 grad_weight kernel (backward_grad_weight_wgmma.cu) reads its shifted
// grad_output operand this way: a register load has no 16-byte alignment to keep, where a
// shared-memory K-major operand would need a copy per tap shift. The registers must stay
// unchanged until the MMA has completed (wgmma::wait).
__device__ __forceinline__ void m64n64k8_tf32_ra(float (&d)[32], const uint32_t (&a)[4], uint64_t b_desc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
               : CONVT_ACC32(0)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}
#undef CONVT_WGMMA_M64N64
#undef CONVT_ACC32
#undef CONVT_ACC4

// 8 x 8 blocks of 16-bit elements transposed through registers, four per warp instruction:
// lanes 8i .. 8i + 7 give the shared-memory addresses of block i's 8 rows (16 bytes each)
// for both. ldmatrix .trans hands each thread its fragment of the transposed block, and
// stmatrix writes fragments back as rows: row r of the stored block is column r of the
// loaded one.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&v)[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "r"(smem_addr)
               : "memory");
}
__device__ __forceinline__ void stmatrix_x4(uint32_t smem_addr, const uint32_t (&v)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr),
               "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
               : "memory");
}
// The same store transposed (.trans): a thread's register i holds (row lane/4, columns
// 2(lane%4), +1) of block i, and block i's column c lands as the 16-byte row at the address
// lane 8i + c gives (an accumulator fragment D[m][n] stored as rows n of 8 m values).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t smem_addr, uint32_t v0, uint32_t v1, uint32_t v2,
                                                  uint32_t v3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr),
               "r"(v0), "r"(v1), "r"(v2), "r"(v3)
               : "memory");
}
#endif  // CONVT_SM90A_DEVICE

}  // namespace wgmma
}  // namespace convt
