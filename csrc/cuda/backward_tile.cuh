// The compute core shared by the backward implicit-GEMM kernels
// (backward_grad_input.cu, backward_grad_weight.cu): one BM x BN output tile per
// 256-thread block (8 warps as 2 along M x 4 along N), BK = 32 reduction steps staged
// in shared memory, accumulators in registers (BM*BN/256 per thread).
//
// Two smem layouts (SmemLayout), chosen by how a kernel's loader walks global memory so
// that its shared-memory stores are conflict-free:
//  - kKMajor: As[k][m], Bs[k][n], rows padded to BM+8 / BN+8 (grad_input: threads run
//    along pixels / channels). A fragment load reads 4 k-rows x 8 consecutive m; a row
//    length = 8 (mod 32) puts those 32 words in 32 banks.
//  - kKInner: As[m][k], Bs[n][k], rows of BK+4 (grad_weight: threads run along pixels =
//    k). Fragment loads read 8 rows x 4 consecutive k; row length = 4 (mod 32) spreads
//    them over 32 banks, and a warp's 32 consecutive-k stores hit 32 banks.
//  (Both: the loaders write each element once per step; the fragment loads read it
//  2-8 times, so the layout favours conflict-free fragment loads.)
//
// Three ways to multiply a staged step (Mma):
//  - kSimt:    CUDA-core FMA, (BM/16) x (BN/16) accumulators per thread (float64).
//  - kTf32:    mma.sync m16n8k8 TF32; warp tile (BM/2) x (BN/4). Operands are stored
//              in smem already rounded to TF32 (store_operand, tf32_bits), so fragment
//              loads are plain. bf16/fp16 operands convert to TF32 exactly (8 / 11 significant
//              bits <= TF32's 11), so they use this path too.
//  - k3xTf32:  fp32-accurate (allow_tf32 = False): the same tiles split into big+small
//              TF32 parts at fragment load, three MMAs per product (see mma.cuh).
#pragma once

#include <type_traits>

#include "backward_common.cuh"
#include "mma.cuh"

namespace convt {
namespace bwd {

constexpr int kTileK = 32;
constexpr int kTileThreads = 256;

enum class SmemLayout { kKMajor, kKInner };

template <int BM, int BN, SmemLayout kLayout>
struct Tile {
  static_assert(BM % 32 == 0 && BN % 32 == 0, "tile must split into 2 x 4 warps of m16n8");
  static constexpr int kM = BM, kN = BN;
  static constexpr bool kKMajor = kLayout == SmemLayout::kKMajor;
  // Shared-memory arrays: [kARows][kLDA] and [kBRows][kLDB].
  static constexpr int kARows = kKMajor ? kTileK : BM, kLDA = kKMajor ? BM + 8 : kTileK + 4;
  static constexpr int kBRows = kKMajor ? kTileK : BN, kLDB = kKMajor ? BN + 8 : kTileK + 4;
  // Element (k, m) of A and (k, n) of B.
  static __device__ __forceinline__ int a_at(int k, int m) { return kKMajor ? k * kLDA + m : m * kLDA + k; }
  static __device__ __forceinline__ int b_at(int k, int n) { return kKMajor ? k * kLDB + n : n * kLDB + k; }
  static constexpr int kWarpM = BM / 2, kWarpN = BN / 4;  // warp tile
  static constexpr int kMI = kWarpM / 16, kNI = kWarpN / 8;
  static constexpr int kAcc = BM * BN / kTileThreads;  // accumulators per thread
  static_assert(kAcc == kMI * kNI * 4, "SIMT and MMA layouts hold the same count");
  static constexpr int kTM = BM / 16, kTN = BN / 16;  // SIMT thread tile
};

// fp32 -> TF32 operand bits, rounding half away from zero: add half a TF32 ulp (2^12 in
// the fp32 bit pattern); the MMA ignores the 13 low bits, so no mask is needed (CUTLASS's
// round_half_ulp_truncate). One integer add, where cvt.rna.tf32.f32 compiles to ~4
// instructions on sm_90: the loaders are instruction-bound (docs/perf-notes-backward.md).
// Inf stays Inf; a NaN whose payload sits only in the low 13 bits would read as Inf.
__device__ __forceinline__ uint32_t tf32_bits(float x) { return __float_as_uint(x) + 0x1000u; }

// Value written to shared memory for an operand element loaded as acc type.
template <Mma kMode, typename T, typename Acc>
__device__ __forceinline__ Acc store_operand(Acc v) {
  if constexpr (kMode == Mma::kTf32 && std::is_same_v<T, float>) {
    return __uint_as_float(tf32_bits(v));
  } else {
    return v;
  }
}

// Row (M index) and column (N index) inside the tile of this thread's accumulator e.
template <class Sh, Mma kMode>
__device__ __forceinline__ void acc_coord(int e, int& row, int& col) {
  const int t = threadIdx.x;
  if constexpr (kMode == Mma::kSimt) {
    row = (t % 16) * Sh::kTM + e / Sh::kTN;
    col = (t / 16) * Sh::kTN + e % Sh::kTN;
  } else {
    const int warp = t / 32, lane = t % 32;
    const int mi = e / (Sh::kNI * 4), ni = (e / 4) % Sh::kNI, c = e % 4;
    row = (warp % 2) * Sh::kWarpM + mi * 16 + lane / 4 + (c >= 2 ? 8 : 0);
    col = (warp / 2) * Sh::kWarpN + ni * 8 + 2 * (lane % 4) + (c & 1);
  }
}

template <class Sh, Mma kMode, typename Acc>
__device__ __forceinline__ void tile_compute(const Acc* As, const Acc* Bs, Acc (&acc)[Sh::kAcc]) {
  const int t = threadIdx.x;
  if constexpr (kMode == Mma::kSimt) {
    const int tx = t % 16, ty = t / 16;
#pragma unroll
    for (int k = 0; k < kTileK; ++k) {
      Acc a[Sh::kTM], b[Sh::kTN];
#pragma unroll
      for (int i = 0; i < Sh::kTM; ++i) a[i] = As[Sh::a_at(k, tx * Sh::kTM + i)];
#pragma unroll
      for (int j = 0; j < Sh::kTN; ++j) b[j] = Bs[Sh::b_at(k, ty * Sh::kTN + j)];
#pragma unroll
      for (int i = 0; i < Sh::kTM; ++i)
#pragma unroll
        for (int j = 0; j < Sh::kTN; ++j)
          acc[i * Sh::kTN + j] = fma(a[i], b[j], acc[i * Sh::kTN + j]);
    }
  } else {
    static_assert(std::is_same_v<Acc, float>, "tensor-core tiles accumulate in float");
    constexpr int MI = Sh::kMI, NI = Sh::kNI;
    const int warp = t / 32, lane = t % 32;
    const int g = lane / 4, q = lane % 4;
    const int m0 = (warp % 2) * Sh::kWarpM, n0 = (warp / 2) * Sh::kWarpN;
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 8) {
      float a[MI][4], b[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const int r = m0 + mi * 16 + g;
        a[mi][0] = As[Sh::a_at(kk + q, r)];
        a[mi][1] = As[Sh::a_at(kk + q, r + 8)];
        a[mi][2] = As[Sh::a_at(kk + q + 4, r)];
        a[mi][3] = As[Sh::a_at(kk + q + 4, r + 8)];
      }
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const int c = n0 + ni * 8 + g;
        b[ni][0] = Bs[Sh::b_at(kk + q, c)];
        b[ni][1] = Bs[Sh::b_at(kk + q + 4, c)];
      }
      if constexpr (kMode == Mma::kTf32) {
        uint32_t au[MI][4], bu[NI][2];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int k = 0; k < 4; ++k) au[mi][k] = __float_as_uint(a[mi][k]);
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
          for (int k = 0; k < 2; ++k) bu[ni][k] = __float_as_uint(b[ni][k]);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int ni = 0; ni < NI; ++ni)
            mma::mma_tf32_m16n8k8(*reinterpret_cast<float(*)[4]>(&acc[(mi * NI + ni) * 4]),
                                  au[mi], bu[ni]);
      } else {
        // Split each operand once, then 3 MMAs per (mi, ni) pair.
        uint32_t ab[MI][4], as[MI][4], bb[NI][2], bs[NI][2];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int k = 0; k < 4; ++k) mma::split_tf32(a[mi][k], ab[mi][k], as[mi][k]);
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
          for (int k = 0; k < 2; ++k) mma::split_tf32(b[ni][k], bb[ni][k], bs[ni][k]);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int ni = 0; ni < NI; ++ni)
            mma::mma_3xtf32_m16n8k8(*reinterpret_cast<float(*)[4]>(&acc[(mi * NI + ni) * 4]),
                                    ab[mi], as[mi], bb[ni], bs[ni]);
      }
    }
  }
}

}  // namespace bwd
}  // namespace convt
