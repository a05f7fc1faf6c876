// Pieces shared by the grad_weight rows kernels: the NCHW ones (backward_grad_weight_rows.cu)
// and the float32 channels_last one (backward_grad_weight_rows_cl.cu). Both own one kernel row
// ki and a group of up to 4 consecutive kj per block, reduce over 32-column segments of input
// rows in the same order (SegmentWalk), multiply with mma.sync and write the same split-K
// workspace ws[split][tap][ci][co_g], so the grid decomposition, the MMA helper and the partial
// tile store live here once.
#pragma once

#include <type_traits>

#include "backward_common.cuh"
#include "backward_tile.cuh"

namespace convt {
namespace bwd {
namespace rows {

constexpr int kThreads = 256;
constexpr int kTW = 32;                                  // input columns per step
constexpr int kMaxTaps = ColumnTapGroup::kMaxTaps;       // taps per block (one kernel row)
constexpr int kMaxPlanes = ColumnTapGroup::kMaxPlanes;   // column residue planes per block

// acc[mi][ni] += a[mi] * b[ni] with the MMA of T's width.
template <typename T, int MI, int NI>
__device__ __forceinline__ void mma_tile(float (&acc)[MI][NI][4], const uint32_t (&a)[MI][4],
                                         const uint32_t (&b)[NI][2]) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      if constexpr (std::is_same_v<T, float>) {
        mma::mma_tf32_m16n8k8(acc[mi][ni], a[mi], b[ni]);
      } else if constexpr (std::is_same_v<T, at::BFloat16>) {
        mma::mma_bf16_m16n8k16(acc[mi][ni], a[mi], b[ni]);
      } else {
        mma::mma_f16_m16n8k16(acc[mi][ni], a[mi], b[ni]);
      }
    }
}

// Plane view of the warp's column block ni: tap = col / CT of the block's group (read
// without run-time indexing into cg, which would put it on the stack).
template <int TT>
__device__ __forceinline__ void tap_view(const ColumnTapGroup& cg, int tap, int& plane, int& shift) {
  plane = 0;
  shift = 0;
#pragma unroll
  for (int j = 0; j < TT; ++j) {
    if (j == tap) {
      shift = cg.shift[j];
      plane = cg.plane[j];
    }
  }
}

// Which channel each accumulator element holds. The NCHW kernels load their fragments 4 bytes at a
// time and use the MMA's own order: fragment row r of m-block mi is channel row m0 + 16 mi + r,
// fragment column j of n-block ni is tile column n0 + 8 ni + j. A kernel whose stages are
// contiguous along the channels (rows_cl) may instead hand each lane adjacent channels, so that one
// 8- or 16-byte load fills several fragment registers (FragmentMap below: kWideOrder, kPairRows);
// M and N are only output indices, so every output is still the same sum in the same MMA order.
//  - kWideOrder rows: fragment row r of mi is channel row m0 + 2 MI (r % 8) + 2 mi + r / 8, so a
//    lane's a[mi][0..1] over all mi (rows gq and gq + 8) are 2 MI adjacent words, and a[mi][2..3] too;
//  - kWideOrder columns, where NI is even (pairs_columns): fragment column j of n-block 2 p + e is
//    tile column n0 + 16 p + 2 j + e, so b[2p][k] and b[2p+1][k] are adjacent words. (An even NI
//    keeps each 16-column pair inside one tap: n0 and CT are multiples of 16.)
//  - kPairRows (rows only; columns in the MMA's order): fragment row r of mi is channel row
//    m0 + 16 mi + 2 (r % 8) + r / 8, so a[mi][0..1] are 2 adjacent words and a[mi][2..3] too:
//    8-byte loads straight into the MMA's registers, where the wide order's 16-byte loads need a
//    move or an add per register to place them (rows_cl without its rounding adds: kTrunc).
constexpr bool pairs_columns(int NI) { return NI % 2 == 0; }

enum FragmentOrder : int { kMmaOrder = 0, kWideOrder = 1, kPairRows = 2 };

template <int MI, int NI, int kOrder>
struct FragmentMap {
  // Accumulator element c of (mi, ni) for lane (gq, q): its tile row and column.
  __device__ __forceinline__ static int row(int m0, int mi, int gq, int c) {
    if constexpr (kOrder == kWideOrder) return m0 + 2 * MI * gq + 2 * mi + (c >= 2 ? 1 : 0);
    else if constexpr (kOrder == kPairRows) return m0 + mi * 16 + 2 * gq + (c >= 2 ? 1 : 0);
    else return m0 + mi * 16 + gq + (c >= 2 ? 8 : 0);
  }
  __device__ __forceinline__ static int col(int n0, int ni, int q, int c) {
    // (2 q + (c & 1): the MMA's accumulator column)
    if constexpr (kOrder == kWideOrder && pairs_columns(NI))
      return n0 + 16 * (ni / 2) + 2 * (2 * q + (c & 1)) + (ni & 1);
    else return n0 + ni * 8 + 2 * q + (c & 1);
  }
};

// Partial tile -> ws[split][tap][ci][co] (every in-range element, zeros included). Warp
// tile (BM/2) x (BN/4) at (m0, n0); columns are TT taps x CT output channels.
template <int MI, int NI, int CT, int kOrder = kMmaOrder>
__device__ __forceinline__ void store_partial(const float (&acc)[MI][NI][4], float* __restrict__ ws,
                                              const Geometry& g, int group, int ci0, int co0,
                                              int ki, int kj0, int taps_here, int m0, int n0) {
  using Map = FragmentMap<MI, NI, kOrder>;
  const int lane = threadIdx.x & 31, gq = lane >> 2, q = lane & 3;
  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int taps = static_cast<int>(g.KH * g.KW);
  float* dst = ws + (static_cast<int64_t>(blockIdx.y) * taps * g.Cin + static_cast<int64_t>(group) * Cin_g) * Cout_g;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int row = Map::row(m0, mi, gq, c);
        const int col = Map::col(n0, ni, q, c);
        const int tap = col / CT;
        const int ci = ci0 + row, co = co0 + col % CT;
        if (ci < Cin_g && co < Cout_g && tap < taps_here) {
          const int kt = ki * static_cast<int>(g.KW) + kj0 + tap;
          dst[(static_cast<int64_t>(kt) * g.Cin + ci) * Cout_g + co] = acc[mi][ni][c];
        }
      }
}

// What a block of either rows kernel owns. blockIdx.x = (((ki * kw_groups + kjg) * groups +
// group) * tiles_m + tm) * tiles_n + tn: the kernel rows of one split are adjacent in the grid,
// so they run together and share x and nearby grad_output rows in L2. blockIdx.y = split:
// segments [s_begin, s_end).
struct RowsBlock {
  int group, ki, kj0, ci0, co0, segs_w;
  int64_t s_begin, s_end;
  ColumnTapGroup cg;  // the columns of taps kj0 .. kj0 + TT - 1
  __device__ __forceinline__ RowsBlock(const Geometry& g, int BM, int CT, int TT, int tiles_m,
                                       int tiles_n, int kw_groups, int64_t chunk) {
    int rest = blockIdx.x;
    const int tn = rest % tiles_n;
    rest /= tiles_n;
    const int tm = rest % tiles_m;
    rest /= tiles_m;
    const int groups = static_cast<int>(g.groups);
    group = rest % groups;
    rest /= groups;
    const int kjg = rest % kw_groups;
    ki = rest / kw_groups;
    kj0 = kjg * TT;
    cg = column_tap_group(kj0, TT, g.KW, g.SW, g.PW, g.DW);
    ci0 = tm * BM;
    co0 = tn * CT;
    segs_w = static_cast<int>((g.W + kTW - 1) / kTW);
    const int64_t segs = g.N * g.H * segs_w;
    s_begin = static_cast<int64_t>(blockIdx.y) * chunk;
    s_end = min(segs, s_begin + chunk);
  }
};

// ---- grad_bias from the staged grad_output rows (the float kernels' kBias) ----
// Each grad_output element is added once: in the output row that this block's kernel row ki owns
// and the columns whose owning tap (geometry.h owning_tap) is in this block's group and reaches
// them from the segment's own input columns.

// Row ownership without a search per step: output row oh = ih * SH - PH + ki * DH is also
// reached by a smaller kernel row ki' exactly where (ki - ki') * DH is a multiple of SH, from
// input row ih + (ki - ki') * DH / SH, whatever ih is; so ki owns oh iff that row is past the
// input for the nearest such ki': ih >= H - d_min (every row where no ki' qualifies).
__device__ __forceinline__ int bias_own_rows_from(const Geometry& g, int ki) {
  const int H = static_cast<int>(g.H), SH = static_cast<int>(g.SH), DH = static_cast<int>(g.DH);
  for (int k = ki - 1; k >= 0; --k) {
    if (((ki - k) * DH) % SH == 0) return H - (ki - k) * DH / SH;
  }
  return 0;
}

// The staged columns that the segment at input column iw0 owns: bit p * kSumSlots + m for plane
// column c = sum_c0 + kSumLanes * m of plane p (kPlanes <= 2; a thread's columns).
template <int kPlanes, int kSumSlots, int kSumLanes>
__device__ __forceinline__ uint32_t bias_owned_columns(const Geometry& g, const ColumnTapGroup& cg, int kj0,
                                                       int iw0, int sum_c0) {
  static_assert(kPlanes >= 1 && kPlanes <= 2 && kPlanes * kSumSlots <= 32, "one bit per column slot");
  const int KW = static_cast<int>(g.KW), SW = static_cast<int>(g.SW), PW = static_cast<int>(g.PW);
  const int DW = static_cast<int>(g.DW), W = static_cast<int>(g.W), Wout = static_cast<int>(g.Wout);
  const int qmin = static_cast<int>(cg.qmin);
  uint32_t bits = 0;
#pragma unroll
  for (int p = 0; p < kPlanes; ++p) {
    const int r = p == 0 ? cg.residue[0] : cg.residue[kPlanes - 1];
#pragma unroll
    for (int m = 0; m < kSumSlots; ++m) {
      const int c = sum_c0 + kSumLanes * m;
      const int ow = (iw0 + qmin + c) * SW + r;
      int iw = -1;
      const int kd = p < cg.planes && c < kTW + cg.halo && ow >= 0 && ow < Wout
                         ? owning_tap(ow, KW, SW, PW, DW, W, iw)
                         : -1;
      if (kd >= kj0 && kd < kj0 + cg.taps && iw >= iw0 && iw < iw0 + kTW) bits |= 1u << (p * kSumSlots + m);
    }
  }
  return bits;
}

// ---- host side: the decomposition both launchers use ----

// Taps per block: the kernel row's KW taps in groups of at most max_taps (<= 4), as even as possible.
inline int64_t grad_weight_rows_taps(const Geometry& g, int64_t max_taps = kMaxTaps) {
  const int64_t kw_groups = ceil_div(g.KW, max_taps);
  return ceil_div(g.KW, kw_groups);
}

// Channel tile: 32 x 32 when both sides have at most 32 channels, else 64 x 64.
inline bool narrow_tile(const Geometry& g) { return g.Cin_g <= 32 && g.Cout_g <= 32; }

inline int64_t rows_tiles(const Geometry& g, int64_t max_taps = kMaxTaps) {
  const int64_t tt = grad_weight_rows_taps(g, max_taps);
  const int64_t c = narrow_tile(g) ? 32 : 64;
  return g.KH * ceil_div(g.KW, tt) * g.groups * ceil_div(g.Cin_g, c) * ceil_div(g.Cout_g, c);
}

// The kBias epilogue of the blocks of channel tile 0: a channel's kSumLanes threads (adjacent
// lanes) added by a fixed shuffle tree, the sum stored by the first of them to
// bias_ws[split][ki][kjg][Cout] (zeros where the block owns nothing), for grad_bias_reduce.
template <int kSumLanes>
__device__ __forceinline__ void store_bias_partial(float bias_acc, float* __restrict__ bias_ws, const Geometry& g,
                                                   int ki, int kw_groups, int kjg, int co0, int Cout_g) {
  const int t = threadIdx.x;
#pragma unroll
  for (int off = kSumLanes / 2; off > 0; off /= 2) bias_acc += __shfl_down_sync(0xffffffffu, bias_acc, off, kSumLanes);
  const int co = co0 + t / kSumLanes;
  if (t % kSumLanes == 0 && co < Cout_g) {
    const int64_t slot = (static_cast<int64_t>(blockIdx.y) * g.KH + ki) * kw_groups + kjg;
    bias_ws[slot * g.Cout + co] = bias_acc;
  }
}

// Whether every output row and column has an owning tap (owning_tap), so that the kBias sums
// above add every grad_output element once. O(Hout * KH + Wout * KW) host steps.
inline bool bias_owned_everywhere(const Geometry& g) {
  int64_t i = 0;
  for (int64_t o = 0; o < g.Hout; ++o)
    if (owning_tap(o, g.KH, g.SH, g.PH, g.DH, g.H, i) < 0) return false;
  for (int64_t o = 0; o < g.Wout; ++o)
    if (owning_tap(o, g.KW, g.SW, g.PW, g.DW, g.W, i) < 0) return false;
  return true;
}

}  // namespace rows
}  // namespace bwd
}  // namespace convt
