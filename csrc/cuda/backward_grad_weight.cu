// grad_weight of conv_transpose2d:
//
//   gw[ci, co_g, ki, kj] = sum_{n, ih, iw} x[n, ci, ih, iw] * go[n, co, ih*SH-PH+ki*DH, iw*SW-PW+kj*DW]
//
// For one tap (ki, kj) this is a GEMM  [Cin_g x P] * [P x Cout_g]  with P = N*H*W pixels:
// the reduction is long and the result small, so the pixel range is split across
// blocks ("split-K"). Each block writes its partial tile to a workspace
// ws[S][taps][Cin][Cout_g]; grad_weight_reduce then sums the S partials in split
// order. No atomics: the result is bit-identical run to run (S depends only on the
// shape and the SM count).
//
// Families:
//  - grad_weight_gemm: tile BM (ci) x (TT taps x CT co) per (tap group, group, split),
//    BM and CT 32/64/128 by the group's channel counts, TT filling narrow layers to 128
//    columns; BK = 32 pixels per step, 256 threads, tensor cores (backward_tile.cuh;
//    64 x 64 on CUDA cores for float64). Blocks of one split are adjacent in the grid,
//    so the taps of a pixel chunk run together and re-read x and go from L2, not DRAM.
//  - grad_weight_direct: one block per (ci, split) with 16 (co, tap) accumulators per
//    thread, for narrow groups (depthwise) where a GEMM tile would be mostly empty.
#include "backward_common.cuh"
#include "backward_tile.cuh"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <type_traits>

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = kTileThreads;
constexpr int kBK = kTileK;  // pixels per step
constexpr int kJ = 16;    // accumulators per thread in the direct kernel

// Tile columns are TT taps x CT output channels (BN = TT * CT): one x tile feeds TT taps,
// which halves (TT = 2) or quarters (TT = 4) the x traffic of narrow layers and gives the
// MMAs a 128-wide tile even when Cout/groups is 32 or 64.
template <typename T, typename Acc, typename Idx, Mma kMode, int BM, int CT, int TT>
__global__ __launch_bounds__(kThreads) void grad_weight_gemm_kernel(const T* __restrict__ x,
                                                                    const T* __restrict__ go,
                                                                    Acc* __restrict__ ws,
                                                                    Geometry g, int tiles_m,
                                                                    int tiles_n, Idx chunk) {
  constexpr int BN = CT * TT;
  using Sh = Tile<BM, BN, SmemLayout::kKInner>;
  // Loader: a warp reads 32 consecutive pixels (k) of one channel row; the 8 warps take
  // rows l_r + 8j. Stores As[m][k] along k are conflict-free.
  constexpr int kRowStep = kThreads / kBK;
  static_assert(CT % kRowStep == 0, "a loader row must stay inside one tap's columns");
  constexpr int kAPer = BM / kRowStep, kBPer = BN / kRowStep;
  __shared__ __align__(16) Acc As[Sh::kARows * Sh::kLDA];
  __shared__ __align__(16) Acc Bs[Sh::kBRows * Sh::kLDB];

  const int t = threadIdx.x;
  // blockIdx.x = ((tap_group * groups + group) * tiles_m + tm) * tiles_n + tn; blockIdx.y = split.
  int rest = blockIdx.x;
  const int tn = rest % tiles_n;
  rest /= tiles_n;
  const int tm = rest % tiles_m;
  rest /= tiles_m;
  const int groups = static_cast<int>(g.groups);
  const int group = rest % groups;
  const int tap0 = (rest / groups) * TT;
  const int split = blockIdx.y;

  const int KW = static_cast<int>(g.KW);
  const int taps = static_cast<int>(g.KH * g.KW);
  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int ci0 = tm * BM, co0 = tn * CT;
  const Idx W = static_cast<Idx>(g.W);
  const Idx HW = static_cast<Idx>(g.H * g.W);
  const Idx P = static_cast<Idx>(g.N) * HW;
  const Idx p_begin = static_cast<Idx>(split) * chunk;
  const Idx p_end = min(P, p_begin + chunk);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int64_t HWo = g.Hout * g.Wout;
  // Output offset of each tap of the tile; a tap past the kernel is never in range.
  int dh[TT], dw[TT];
#pragma unroll
  for (int tl = 0; tl < TT; ++tl) {
    const int tap = tap0 + tl;
    const int ki = tap / KW, kj = tap - ki * KW;
    dh[tl] = tap < taps ? ki * static_cast<int>(g.DH) - static_cast<int>(g.PH) : -(1 << 30);
    dw[tl] = kj * static_cast<int>(g.DW) - static_cast<int>(g.PW);
  }

  // Loader: thread reads pixel p0 + t%32 for channel rows t/32 + 8j of both operands.
  // B row j is column 8j + l_r of the tile: tap tl = 8j / CT, channel co0 + 8j % CT + l_r.
  const int l_k = t % kBK, l_r = t / kBK;
  // Rows j of this thread are ci0 + l_r + 8j (A) and co0 + l_r + (8j % CT) (B): in range
  // for j (resp. (8j % CT) / 8) below these counts.
  const int a_rows = (Cin_g - ci0 - l_r + kRowStep - 1) / kRowStep;
  const int b_rows = (Cout_g - co0 - l_r + kRowStep - 1) / kRowStep;
  const int64_t x_ch = static_cast<int64_t>(group) * Cin_g + ci0 + l_r;     // channel of row j=0
  const int64_t go_ch = static_cast<int64_t>(group) * Cout_g + co0 + l_r;  // channel of row j=0
  const int64_t a_stride = static_cast<int64_t>(kRowStep) * HW;   // x, between loader rows
  const int64_t b_stride = kRowStep * HWo;                        // go, between loader rows

  Acc a_reg[kAPer], b_reg[kBPer];
  auto load = [&](Idx p0) {
    const Idx p = p0 + l_k;
    const bool p_ok = p < p_end;
    Idx n = 0, r = 0, ih = 0, iw = 0;
    if (p_ok) {
      n = p / HW;
      r = p - n * HW;
      ih = r / W;
      iw = r - ih * W;
    }
    // Walk the rows with one pointer add each (the loaders, not the MMAs, bound the step's
    // instruction count).
    const T* xs = x + (static_cast<int64_t>(n) * g.Cin + x_ch) * HW + r;
    const int a_lim = p_ok ? a_rows : 0;
#pragma unroll
    for (int j = 0; j < kAPer; ++j) {
      a_reg[j] = j < a_lim ? static_cast<Acc>(*xs) : Acc(0);
      xs += a_stride;
    }
    const int oh0 = static_cast<int>(ih * g.SH), ow0 = static_cast<int>(iw * g.SW);
    const T* go_n = go + (static_cast<int64_t>(n) * g.Cout + go_ch) * HWo;
#pragma unroll
    for (int tl = 0; tl < TT; ++tl) {
      const int oh = oh0 + dh[tl], ow = ow0 + dw[tl];
      const bool o_ok = p_ok && oh >= 0 && oh < Hout && ow >= 0 && ow < Wout;
      const T* gs = go_n + static_cast<int64_t>(oh) * Wout + ow;
      const int b_lim = o_ok ? b_rows : 0;
#pragma unroll
      for (int jj = 0; jj < CT / kRowStep; ++jj) {
        b_reg[tl * (CT / kRowStep) + jj] = jj < b_lim ? static_cast<Acc>(*gs) : Acc(0);
        gs += b_stride;
      }
    }
  };

  Acc acc[Sh::kAcc];
#pragma unroll
  for (int e = 0; e < Sh::kAcc; ++e) acc[e] = Acc(0);

  if (p_begin < p_end) load(p_begin);
  for (Idx p0 = p_begin; p0 < p_end; p0 += kBK) {
#pragma unroll
    for (int j = 0; j < kAPer; ++j) As[Sh::a_at(l_k, l_r + kRowStep * j)] = store_operand<kMode, T>(a_reg[j]);
#pragma unroll
    for (int j = 0; j < kBPer; ++j) Bs[Sh::b_at(l_k, l_r + kRowStep * j)] = store_operand<kMode, T>(b_reg[j]);
    __syncthreads();
    if (p0 + kBK < p_end) load(p0 + kBK);
    tile_compute<Sh, kMode>(As, Bs, acc);
    __syncthreads();
  }

  // Partial tile -> ws[split][tap][ci][co] (every in-range element, zeros included).
  Acc* dst = ws + (static_cast<int64_t>(split) * taps * g.Cin + static_cast<int64_t>(group) * Cin_g) * Cout_g;
#pragma unroll
  for (int e = 0; e < Sh::kAcc; ++e) {
    int row, col;
    acc_coord<Sh, kMode>(e, row, col);
    const int tap = tap0 + col / CT;
    const int ci = ci0 + row, co = co0 + col % CT;
    if (ci < Cin_g && co < Cout_g && tap < taps) {
      dst[(static_cast<int64_t>(tap) * g.Cin + ci) * Cout_g + co] = acc[e];
    }
  }
}

// One block per (input channel ci, split). The (co_g, tap) pairs of ci are handled
// kJ at a time; each thread accumulates its pixels, then a fixed-order block sum.
template <typename T, typename Acc, typename Idx>
__global__ __launch_bounds__(kThreads) void grad_weight_direct_kernel(const T* __restrict__ x,
                                                                      const T* __restrict__ go,
                                                                      Acc* __restrict__ ws,
                                                                      Geometry g, Idx chunk) {
  __shared__ int64_t s_off[kJ];  // channel offset of go for pair jj
  __shared__ int s_dh[kJ], s_dw[kJ];
  __shared__ Acc s_red[kThreads / 32];

  const int ci = blockIdx.x;
  const int split = blockIdx.y;
  const int Cout_g = static_cast<int>(g.Cout_g);
  const int KW = static_cast<int>(g.KW);
  const int taps = static_cast<int>(g.KH * g.KW);
  const int J = Cout_g * taps;
  const int group = ci / static_cast<int>(g.Cin_g);
  const Idx W = static_cast<Idx>(g.W);
  const Idx HW = static_cast<Idx>(g.H * g.W);
  const Idx P = static_cast<Idx>(g.N) * HW;
  const Idx p_begin = static_cast<Idx>(split) * chunk;
  const Idx p_end = min(P, p_begin + chunk);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int64_t HWo = g.Hout * g.Wout;

  for (int jc = 0; jc < J; jc += kJ) {
    if (threadIdx.x < kJ) {
      const int j = min(jc + static_cast<int>(threadIdx.x), J - 1);
      const int co = j / taps, tap = j - co * taps;
      const int ki = tap / KW, kj = tap - ki * KW;
      s_off[threadIdx.x] = (static_cast<int64_t>(group) * Cout_g + co) * HWo;
      s_dh[threadIdx.x] = ki * static_cast<int>(g.DH) - static_cast<int>(g.PH);
      s_dw[threadIdx.x] = kj * static_cast<int>(g.DW) - static_cast<int>(g.PW);
    }
    __syncthreads();
    Acc acc[kJ];
#pragma unroll
    for (int jj = 0; jj < kJ; ++jj) acc[jj] = Acc(0);
    const int jn = min(kJ, J - jc);
    for (Idx p = p_begin + threadIdx.x; p < p_end; p += kThreads) {
      const Idx n = p / HW;
      const Idx r = p - n * HW;
      const Idx ih = r / W;
      const Idx iw = r - ih * W;
      const Acc xv = static_cast<Acc>(x[(static_cast<int64_t>(n) * g.Cin + ci) * HW + r]);
      const T* go_n = go + static_cast<int64_t>(n) * g.Cout * HWo;
      const int oh0 = static_cast<int>(ih * g.SH), ow0 = static_cast<int>(iw * g.SW);
#pragma unroll
      for (int jj = 0; jj < kJ; ++jj) {
        if (jj < jn) {
          const int oh = oh0 + s_dh[jj], ow = ow0 + s_dw[jj];
          if (oh >= 0 && oh < Hout && ow >= 0 && ow < Wout) {
            acc[jj] = fma(xv, static_cast<Acc>(go_n[s_off[jj] + static_cast<int64_t>(oh) * Wout + ow]),
                          acc[jj]);
          }
        }
      }
    }
#pragma unroll
    for (int jj = 0; jj < kJ; ++jj) {
      const Acc total = block_sum_fixed_order<kThreads>(acc[jj], s_red);
      if (threadIdx.x == 0 && jj < jn) {
        const int j = jc + jj;
        const int co = j / taps, tap = j - co * taps;
        ws[((static_cast<int64_t>(split) * taps + tap) * g.Cin + ci) * Cout_g + co] = total;
      }
    }
    // block_sum_fixed_order ends with a barrier, so s_off may be rewritten now.
  }
}

// gw[ci, co, ki, kj] = sum_{s = 0..S-1} ws[s][tap][ci][co], in split order.
template <typename T, typename Acc>
__global__ __launch_bounds__(kThreads) void grad_weight_reduce_kernel(const Acc* __restrict__ ws,
                                                                      T* __restrict__ gw,
                                                                      Geometry g, Strides4 st,
                                                                      int64_t splits) {
  const int64_t taps = g.KH * g.KW;
  const int64_t E = taps * g.Cin * g.Cout_g;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < E;
       e += static_cast<int64_t>(gridDim.x) * kThreads) {
    Acc sum = Acc(0);
    for (int64_t s = 0; s < splits; ++s) sum += ws[s * E + e];
    const int64_t co = e % g.Cout_g;
    const int64_t rest = e / g.Cout_g;
    const int64_t ci = rest % g.Cin;
    const int64_t tap = rest / g.Cin;
    const int64_t ki = tap / g.KW, kj = tap % g.KW;
    gw[ci * st.s0 + co * st.s1 + ki * st.s2 + kj * st.s3] = static_cast<T>(sum);
  }
}

// Tile shape of the tensor-core path: BM input channels x (TT taps x CT output channels).
// BM and CT are the smallest of 32 / 64 / 128 covering Cin/groups and Cout/groups (a mixed
// 32 x 128 takes 64); TT fills the columns to 128 where Cout/groups is narrow. Six shapes,
// to keep the build small. The exact paths (float64, SIMT, 3xTF32) and int64 index math
// use 64 x (1 x 64).
struct GwShape {
  int bm, ct, tt;
};

int extent(int64_t channels) { return channels <= 32 ? 32 : channels <= 64 ? 64 : 128; }

GwShape tensor_core_shape(const Geometry& g) {
  const int bm = extent(g.Cin_g), ct = extent(g.Cout_g);
  if (ct == 32) return {bm == 32 ? 32 : 64, 32, 4};
  if (ct == 64) return bm <= 64 ? GwShape{64, 64, 2} : GwShape{128, 64, 1};
  return {bm <= 64 ? 64 : 128, 128, 1};
}

int64_t gemm_tiles(const Geometry& g, const GwShape& s) {
  return ceil_div(g.KH * g.KW, s.tt) * g.groups * ceil_div(g.Cin_g, s.bm) * ceil_div(g.Cout_g, s.ct);
}

// Tile count of the tensor-core shape, for choosing the split count.
int64_t gemm_tiles(const Geometry& g) { return gemm_tiles(g, tensor_core_shape(g)); }

}  // namespace

// Enough blocks for ~4 waves, each split at least 8 steps of pixels, and a
// workspace of at most 256 MiB.
int64_t grad_weight_gemm_splits(const Geometry& g) {
  const int64_t P = g.N * g.H * g.W;
  const int64_t tiles = gemm_tiles(g);
  const int64_t E = g.KH * g.KW * g.Cin * g.Cout_g;
  int64_t s = ceil_div(int64_t(sm_count()) * 4, tiles);
  s = std::min(s, ceil_div(P, kBK * 8));
  s = std::min<int64_t>(s, 65535);
  s = std::min(s, std::max<int64_t>(1, (int64_t(256) << 20) / (8 * E)));
  return std::max<int64_t>(s, 1);
}

int64_t grad_weight_direct_splits(const Geometry& g) {
  const int64_t P = g.N * g.H * g.W;
  const int64_t E = g.KH * g.KW * g.Cin * g.Cout_g;
  int64_t s = ceil_div(int64_t(sm_count()) * 8, g.Cin);
  s = std::min(s, ceil_div(P, kThreads * 4));
  s = std::min<int64_t>(s, 65535);
  s = std::min(s, std::max<int64_t>(1, (int64_t(256) << 20) / (8 * E)));
  return std::max<int64_t>(s, 1);
}

namespace {

// One dtype's launch. A function template, so that `if constexpr` discards the modes a
// dtype does not use (inside AT_DISPATCH's lambda it would not).
template <typename scalar_t, int BM, int CT, int TT, Mma kMode, typename Idx>
void grad_weight_gemm_typed(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                            int64_t splits, const at::Tensor& ws) {
  using Acc = acc_t<scalar_t>;
  const int64_t P = g.N * g.H * g.W;
  const int64_t chunk = ceil_div(ceil_div(P, splits), kBK) * kBK;
  const int64_t tiles = gemm_tiles(g, GwShape{BM, CT, TT});
  TORCH_CHECK(tiles < (int64_t(1) << 31), "convt: too many grad_weight tiles");
  TORCH_CHECK(g.Hout < (1 << 29) && g.Wout < (1 << 29), "convt: spatial size too large");
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splits));
  const int tiles_m = static_cast<int>(ceil_div(g.Cin_g, BM));
  const int tiles_n = static_cast<int>(ceil_div(g.Cout_g, CT));
  auto stream = at::cuda::getCurrentCUDAStream();
  grad_weight_gemm_kernel<scalar_t, Acc, Idx, kMode, BM, CT, TT><<<grid, kThreads, 0, stream>>>(
      x.const_data_ptr<scalar_t>(), go.const_data_ptr<scalar_t>(), ws.mutable_data_ptr<Acc>(), g,
      tiles_m, tiles_n, static_cast<Idx>(chunk));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// True when the pixel index math of a split fits int32 (any split count <= P).
bool gemm_small(const Geometry& g) { return fits_int32(2 * g.N * g.H * g.W + 2 * kBK); }

template <typename scalar_t, Mma kMode>
void grad_weight_gemm_by_shape(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                               int64_t splits, const at::Tensor& ws) {
  if (!gemm_small(g)) {
    grad_weight_gemm_typed<scalar_t, 64, 64, 1, kMode, int64_t>(x, go, g, splits, ws);
    return;
  }
  const GwShape s = tensor_core_shape(g);
  if (s.ct == 32) {
    if (s.bm == 32) {
      grad_weight_gemm_typed<scalar_t, 32, 32, 4, kMode, int32_t>(x, go, g, splits, ws);
    } else {
      grad_weight_gemm_typed<scalar_t, 64, 32, 4, kMode, int32_t>(x, go, g, splits, ws);
    }
  } else if (s.ct == 64) {
    if (s.bm == 64) {
      grad_weight_gemm_typed<scalar_t, 64, 64, 2, kMode, int32_t>(x, go, g, splits, ws);
    } else {
      grad_weight_gemm_typed<scalar_t, 128, 64, 1, kMode, int32_t>(x, go, g, splits, ws);
    }
  } else {
    if (s.bm == 64) {
      grad_weight_gemm_typed<scalar_t, 64, 128, 1, kMode, int32_t>(x, go, g, splits, ws);
    } else {
      grad_weight_gemm_typed<scalar_t, 128, 128, 1, kMode, int32_t>(x, go, g, splits, ws);
    }
  }
}

// 64 x 64 only (float64, forced SIMT, 3xTF32): the slow, exact paths.
template <typename scalar_t, Mma kMode>
void grad_weight_gemm_64(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                         int64_t splits, const at::Tensor& ws) {
  if (gemm_small(g)) {
    grad_weight_gemm_typed<scalar_t, 64, 64, 1, kMode, int32_t>(x, go, g, splits, ws);
  } else {
    grad_weight_gemm_typed<scalar_t, 64, 64, 1, kMode, int64_t>(x, go, g, splits, ws);
  }
}

// float64 multiplies on CUDA cores; 16-bit types convert exactly to TF32 (one mode);
// float follows `mode` (allow_tf32, 3xTF32, or SIMT when forced for tests).
template <typename scalar_t>
void grad_weight_gemm_dispatch(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                               int64_t splits, const at::Tensor& ws, Mma mode) {
  if constexpr (std::is_same_v<scalar_t, double>) {
    grad_weight_gemm_64<scalar_t, Mma::kSimt>(x, go, g, splits, ws);
  } else if constexpr (std::is_same_v<scalar_t, float>) {
    if (mode == Mma::kSimt) {
      grad_weight_gemm_64<scalar_t, Mma::kSimt>(x, go, g, splits, ws);
    } else if (mode == Mma::k3xTf32) {
      grad_weight_gemm_64<scalar_t, Mma::k3xTf32>(x, go, g, splits, ws);
    } else {
      grad_weight_gemm_by_shape<scalar_t, Mma::kTf32>(x, go, g, splits, ws);
    }
  } else {
    grad_weight_gemm_by_shape<scalar_t, Mma::kTf32>(x, go, g, splits, ws);
  }
}

}  // namespace

void grad_weight_gemm(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                      int64_t splits, const at::Tensor& ws, Mma mode) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_grad_weight_gemm", [&] {
    grad_weight_gemm_dispatch<scalar_t>(x, go, g, splits, ws, mode);
  });
}

void grad_weight_direct(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                        int64_t splits, const at::Tensor& ws) {
  const int64_t P = g.N * g.H * g.W;
  const int64_t chunk = ceil_div(P, splits);
  TORCH_CHECK(g.Cin < (int64_t(1) << 31), "convt: too many input channels");
  TORCH_CHECK(g.Hout < (1 << 30) && g.Wout < (1 << 30), "convt: spatial size too large");
  const dim3 grid(static_cast<unsigned>(g.Cin), static_cast<unsigned>(splits));
  const bool small = fits_int32(P + chunk + kThreads);
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_grad_weight_direct", [&] {
    using Acc = acc_t<scalar_t>;
    if (small) {
      grad_weight_direct_kernel<scalar_t, Acc, int32_t><<<grid, kThreads, 0, stream>>>(
          x.const_data_ptr<scalar_t>(), go.const_data_ptr<scalar_t>(), ws.mutable_data_ptr<Acc>(), g,
          static_cast<int32_t>(chunk));
    } else {
      grad_weight_direct_kernel<scalar_t, Acc, int64_t><<<grid, kThreads, 0, stream>>>(
          x.const_data_ptr<scalar_t>(), go.const_data_ptr<scalar_t>(), ws.mutable_data_ptr<Acc>(), g,
          chunk);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

void grad_weight_reduce(const at::Tensor& ws, const Geometry& g, int64_t splits,
                        const at::Tensor& grad_weight) {
  const int64_t E = g.KH * g.KW * g.Cin * g.Cout_g;
  const int64_t blocks = std::min<int64_t>(ceil_div(E, kThreads), int64_t(sm_count()) * 16);
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_weight.scalar_type(), "convt_grad_weight_reduce", [&] {
    using Acc = acc_t<scalar_t>;
    grad_weight_reduce_kernel<scalar_t, Acc><<<blocks, kThreads, 0, stream>>>(
        ws.const_data_ptr<Acc>(), grad_weight.mutable_data_ptr<scalar_t>(), g,
        strides_of(grad_weight), splits);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace bwd
}  // namespace convt
