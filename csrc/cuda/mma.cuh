// Tensor-core and async-copy helpers for the CUDA kernels (sm_80+, used on sm_90a).
//
// Thin inline-PTX wrappers around mma.sync (warp-wide, synchronous MMA), so that the
// kernels read as "load fragments, mma, store" and the fragment layouts are written
// down in ONE place. Every MMA accumulates in fp32: D += A * B.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k*"). Per lane:
//   g = lane / 4 (0..7, "group"), t = lane % 4 (0..3, "thread in group").
//   A is M x K row-major (row = M index), B is K x N column-major (col = N index),
//   C/D is M x N.
//
//   TF32 m16n8k8  (one 32-bit register holds one tf32 value)
//     a[0] = A[g    ][t    ]   a[1] = A[g + 8][t    ]
//     a[2] = A[g    ][t + 4]   a[3] = A[g + 8][t + 4]
//     b[0] = B[t    ][g]       b[1] = B[t + 4][g]
//
//   BF16 / FP16 m16n8k16 (one 32-bit register holds two 16-bit values; the LOWER
//   half is the smaller K index)
//     a[0] = A[g    ][2t, 2t+1]       a[1] = A[g + 8][2t, 2t+1]
//     a[2] = A[g    ][2t+8, 2t+9]     a[3] = A[g + 8][2t+8, 2t+9]
//     b[0] = B[2t, 2t+1][g]           b[1] = B[2t+8, 2t+9][g]
//
//   Accumulator (both shapes, fp32)
//     d[0] = D[g    ][2t]   d[1] = D[g    ][2t + 1]
//     d[2] = D[g + 8][2t]   d[3] = D[g + 8][2t + 1]
//
// 3xTF32 (fp32-accurate products on TF32 tensor cores): split x = big + small with
// big = tf32(x), small = tf32(x - big); then a*b ~= a_big*b_big + a_big*b_small +
// a_small*b_big (the small*small term is below fp32 rounding). Accumulate the two
// correction terms first (they are small) and the big product last, per k-step, and add
// each k-step into the running sum in fp32: mma_3xtf32 does that.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace convt {
namespace mma {

// ---- operand conversion ----------------------------------------------------------

// fp32 -> tf32 with round-to-nearest (ties away), as cuDNN/cuBLAS do. The result is an
// fp32 bit pattern with the low 13 mantissa bits zero. Feeding raw fp32 to a tf32 MMA
// would truncate instead, doubling the error.
__device__ __forceinline__ uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// x = big + small, both tf32 (see 3xTF32 above).
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small) {
  big = to_tf32(x);
  small = to_tf32(x - __uint_as_float(big));
}

// Two 16-bit values into one register; `lo` is the smaller K index.
__device__ __forceinline__ uint32_t pack2(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}
__device__ __forceinline__ uint32_t pack2(__half lo, __half hi) {
  return static_cast<uint32_t>(__half_as_ushort(lo)) |
         (static_cast<uint32_t>(__half_as_ushort(hi)) << 16);
}

// ---- mma.sync ----------------------------------------------------------------------

// d += a * b, m16n8k8, tf32 inputs (bit patterns from to_tf32/split_tf32).
__device__ __forceinline__ void mma_tf32_m16n8k8(float (&d)[4], const uint32_t (&a)[4],
                                                 const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a * b, m16n8k16, bf16 inputs (pairs packed with pack2).
__device__ __forceinline__ void mma_bf16_m16n8k16(float (&d)[4], const uint32_t (&a)[4],
                                                  const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a * b, m16n8k16, fp16 inputs (pairs packed with pack2).
__device__ __forceinline__ void mma_f16_m16n8k16(float (&d)[4], const uint32_t (&a)[4],
                                                 const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a * b in fp32 accuracy from split operands (3xTF32): small terms first.
//
// The k-step's three products are summed from zero and then added to d with an ordinary
// (round-to-nearest) fp32 add, instead of chaining d through the tensor core. The tensor
// core's fp32 accumulation truncates, and over a long K that bias adds up: chained, the
// forward measured 1.3e-5 relative error at K = 2048 (dcgan_g2) against PyTorch's 4e-7.
// Cost: 4 FADD per 3 HMMA, strict-fp32 mode only.
__device__ __forceinline__ void mma_3xtf32_m16n8k8(float (&d)[4], const uint32_t (&a_big)[4],
                                                   const uint32_t (&a_small)[4],
                                                   const uint32_t (&b_big)[2],
                                                   const uint32_t (&b_small)[2]) {
  float t[4] = {0.f, 0.f, 0.f, 0.f};
  mma_tf32_m16n8k8(t, a_small, b_big);
  mma_tf32_m16n8k8(t, a_big, b_small);
  mma_tf32_m16n8k8(t, a_big, b_big);
#pragma unroll
  for (int k = 0; k < 4; ++k) d[k] += t[k];
}

// ---- cp.async (global -> shared without registers) ----------------------------------

// Copies 4 bytes, or writes 4 zero bytes when !valid (src-size 0: nothing is read, but
// `src` must still be a valid generic address; pass the tensor's base pointer then).
__device__ __forceinline__ void cp_async4(void* smem_dst, const void* src, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  const int n = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}

// 8 bytes (both addresses 8-byte aligned), zero-filled when !valid.
__device__ __forceinline__ void cp_async8(void* smem_dst, const void* src, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  const int n = valid ? 8 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}

// 16 bytes (both addresses 16-byte aligned), zero-filled when !valid.
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* src, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `N` most recent commit groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace mma
}  // namespace convt
