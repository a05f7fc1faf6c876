// grad_input of conv_transpose2d = conv2d(grad_output, weight, stride, padding,
// dilation, groups), an ordinary strided convolution:
//
//   gi[n, ci, ih, iw] = sum_{co in group, ki, kj} go[n, co, ih*SH-PH+ki*DH, iw*SW-PW+kj*DW]
//                                                 * w[ci, co_g, ki, kj]
//
// Two kernel families:
//  - grad_input_gemm: implicit GEMM per group. Rows m = input pixels (n, ih, iw),
//    columns = ci of the group, reduction k = (tap, co_g) with the tap outermost, so the
//    gather offsets and the bounds test of a tap are computed once per thread and tap.
//    Tile BM = 128 pixels x BN = 32/64/128 channels (by Cin/groups), 256 threads, BK = 32,
//    register-prefetched single smem buffer, tensor cores (backward_tile.cuh; 64 x 64 on
//    CUDA cores for float64). Split-K over blockIdx.z when the grid is small.
//  - grad_input_direct: one thread per grad_input element, for groups too narrow for a
//    GEMM tile (depthwise; Cin/groups < 8, or < 16 for float64: backward.cu decides).
#include "backward_common.cuh"
#include "backward_tile.cuh"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <type_traits>

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = kTileThreads;
constexpr int kBK = kTileK;  // (tap, co) per step

// Index math on pixels uses Idx (int32_t when N*H*W and N*Cout*Hout*Wout fit);
// memory offsets are int64_t. Tile rows = pixels (BM), columns = channels (BN).
//
// Split-K (grids with fewer than two blocks per SM, e.g. dcgan_g2's 2048 pixels x 512
// channels over K = 4096): blockIdx.z takes steps [z * steps_per_split, ...) and, when
// `ws` is set, writes its partial tile to ws[z][ci][m]; grad_input_split_reduce sums the
// splits in order (deterministic).
template <typename T, typename Acc, typename Idx, Mma kMode, int BM, int BN>
__global__ __launch_bounds__(kThreads) void grad_input_gemm_kernel(const T* __restrict__ go,
                                                                   const T* __restrict__ wt,
                                                                   T* __restrict__ gi,
                                                                   Geometry g, Strides4 gs,
                                                                   int tiles_n, int steps_per_split,
                                                                   Acc* __restrict__ ws) {
  using Sh = Tile<BM, BN, SmemLayout::kKMajor>;
  constexpr int kAPer = BM * kBK / kThreads;  // A elements loaded per thread and step
  constexpr int kBPer = BN * kBK / kThreads;
  constexpr int kARowStep = kThreads / BM, kBRowStep = kThreads / BN;
  __shared__ __align__(16) Acc As[Sh::kARows * Sh::kLDA];
  __shared__ __align__(16) Acc Bs[Sh::kBRows * Sh::kLDB];

  const int t = threadIdx.x;
  const int group = blockIdx.y / tiles_n;
  const int c0 = (blockIdx.y - group * tiles_n) * BN;
  const Idx HW = static_cast<Idx>(g.H * g.W);
  const Idx M = static_cast<Idx>(g.N) * HW;
  const Idx m0 = static_cast<Idx>(blockIdx.x) * BM;
  const int Cout_g = static_cast<int>(g.Cout_g), Cin_g = static_cast<int>(g.Cin_g);
  const int KW = static_cast<int>(g.KW), taps = static_cast<int>(g.KH * g.KW);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int64_t HWo = g.Hout * g.Wout;

  // A loader: this thread gathers pixel m0 + t%BM for k rows t/BM + kARowStep*j.
  const int a_m = t % BM, a_k = t / BM;
  const Idx m = m0 + a_m;
  const bool m_ok = m < M;
  int oh0 = 0, ow0 = 0;
  int64_t go_base = 0;
  if (m_ok) {
    const Idx n = m / HW;
    const Idx r = m - n * HW;
    const Idx ih = r / static_cast<Idx>(g.W);
    const Idx iw = r - ih * static_cast<Idx>(g.W);
    oh0 = static_cast<int>(ih * g.SH - g.PH);
    ow0 = static_cast<int>(iw * g.SW - g.PW);
    go_base = (static_cast<int64_t>(n) * g.Cout + static_cast<int64_t>(group) * Cout_g) * HWo;
  }
  // B loader: this thread reads input channel c0 + t%BN for k rows t/BN + kBRowStep*j.
  const int b_c = t % BN, b_k = t / BN;
  const bool c_ok = c0 + b_c < Cin_g;
  const T* wt_g = wt + static_cast<int64_t>(group) * taps * Cout_g * Cin_g + c0 + b_c;

  const int steps_per_tap = (Cout_g + kBK - 1) / kBK;
  const int step_begin = blockIdx.z * steps_per_split;
  const int steps = min(taps * steps_per_tap, step_begin + steps_per_split);
  const int64_t a_stride = kARowStep * HWo;                        // go, between loader rows
  const int64_t b_stride = static_cast<int64_t>(kBRowStep) * Cin_g;  // wt, between loader rows

  Acc a_reg[kAPer], b_reg[kBPer];
  auto load = [&](int step) {
    const int tap = step / steps_per_tap;
    const int co0 = (step - tap * steps_per_tap) * kBK;
    const int ki = tap / KW, kj = tap - ki * KW;
    const int oh = oh0 + ki * static_cast<int>(g.DH);
    const int ow = ow0 + kj * static_cast<int>(g.DW);
    const bool ok = m_ok && oh >= 0 && oh < Hout && ow >= 0 && ow < Wout;
    // Walk the rows with one pointer add each (the loaders, not the MMAs, bound the step's
    // instruction count); row j is in range while kARowStep * j < a_lim.
    const T* src = go + go_base + static_cast<int64_t>(oh) * Wout + ow + (co0 + a_k) * HWo;
    const int a_lim = ok ? Cout_g - co0 - a_k : 0;
#pragma unroll
    for (int j = 0; j < kAPer; ++j) {
      a_reg[j] = kARowStep * j < a_lim ? static_cast<Acc>(*src) : Acc(0);
      src += a_stride;
    }
    const T* wsrc = wt_g + (static_cast<int64_t>(tap) * Cout_g + co0 + b_k) * Cin_g;
    const int b_lim = c_ok ? Cout_g - co0 - b_k : 0;
#pragma unroll
    for (int j = 0; j < kBPer; ++j) {
      b_reg[j] = kBRowStep * j < b_lim ? static_cast<Acc>(*wsrc) : Acc(0);
      wsrc += b_stride;
    }
  };

  Acc acc[Sh::kAcc];
#pragma unroll
  for (int e = 0; e < Sh::kAcc; ++e) acc[e] = Acc(0);

  if (step_begin < steps) load(step_begin);
  for (int step = step_begin; step < steps; ++step) {
#pragma unroll
    for (int j = 0; j < kAPer; ++j) As[Sh::a_at(a_k + kARowStep * j, a_m)] = store_operand<kMode, T>(a_reg[j]);
#pragma unroll
    for (int j = 0; j < kBPer; ++j) Bs[Sh::b_at(b_k + kBRowStep * j, b_c)] = store_operand<kMode, T>(b_reg[j]);
    __syncthreads();
    if (step + 1 < steps) load(step + 1);
    tile_compute<Sh, kMode>(As, Bs, acc);
    __syncthreads();
  }

  // Epilogue: write through grad_input's strides (NCHW or channels_last), or the split's
  // partial tile to ws[z][ci][m].
  if (ws != nullptr) {
    Acc* dst = ws + (static_cast<int64_t>(blockIdx.z) * g.Cin + static_cast<int64_t>(group) * Cin_g) * M;
#pragma unroll
    for (int e = 0; e < Sh::kAcc; ++e) {
      int row, col;
      acc_coord<Sh, kMode>(e, row, col);
      const Idx mm = m0 + row;
      const int c = c0 + col;
      if (mm < M && c < Cin_g) dst[static_cast<int64_t>(c) * M + mm] = acc[e];
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < Sh::kAcc; ++e) {
    int row, col;
    acc_coord<Sh, kMode>(e, row, col);
    const Idx mm = m0 + row;
    const int c = c0 + col;
    if (mm >= M || c >= Cin_g) continue;
    const Idx n = mm / HW;
    const Idx r = mm - n * HW;
    const Idx ih = r / static_cast<Idx>(g.W);
    const Idx iw = r - ih * static_cast<Idx>(g.W);
    gi[static_cast<int64_t>(n) * gs.s0 + (static_cast<int64_t>(group) * Cin_g + c) * gs.s1 +
       static_cast<int64_t>(ih) * gs.s2 + static_cast<int64_t>(iw) * gs.s3] = static_cast<T>(acc[e]);
  }
}

// One thread per grad_input element (NCHW order of the logical index).
template <typename T, typename Acc, typename Idx>
__global__ __launch_bounds__(kThreads) void grad_input_direct_kernel(const T* __restrict__ go,
                                                                     const T* __restrict__ w,
                                                                     T* __restrict__ gi,
                                                                     Geometry g, Strides4 gs) {
  const Idx total = static_cast<Idx>(g.N * g.Cin * g.H * g.W);
  const int Cout_g = static_cast<int>(g.Cout_g);
  const int KH = static_cast<int>(g.KH), KW = static_cast<int>(g.KW);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int64_t HWo = g.Hout * g.Wout;
  const int taps = KH * KW;
  for (Idx e = static_cast<Idx>(blockIdx.x) * kThreads + threadIdx.x; e < total;
       e += static_cast<Idx>(gridDim.x) * kThreads) {
    Idx r = e;
    const Idx iw = r % static_cast<Idx>(g.W);
    r /= static_cast<Idx>(g.W);
    const Idx ih = r % static_cast<Idx>(g.H);
    r /= static_cast<Idx>(g.H);
    const Idx ci = r % static_cast<Idx>(g.Cin);
    const Idx n = r / static_cast<Idx>(g.Cin);
    const int64_t group = static_cast<int64_t>(ci) / g.Cin_g;
    const T* go_n = go + (static_cast<int64_t>(n) * g.Cout + group * Cout_g) * HWo;
    const T* w_c = w + static_cast<int64_t>(ci) * Cout_g * taps;
    const int oh0 = static_cast<int>(ih * g.SH - g.PH), ow0 = static_cast<int>(iw * g.SW - g.PW);
    Acc acc = Acc(0);
    for (int ki = 0; ki < KH; ++ki) {
      const int oh = oh0 + ki * static_cast<int>(g.DH);
      if (oh < 0 || oh >= Hout) continue;
      for (int kj = 0; kj < KW; ++kj) {
        const int ow = ow0 + kj * static_cast<int>(g.DW);
        if (ow < 0 || ow >= Wout) continue;
        const T* src = go_n + static_cast<int64_t>(oh) * Wout + ow;
        const T* wsrc = w_c + ki * KW + kj;
        for (int co = 0; co < Cout_g; ++co) {
          acc = fma(static_cast<Acc>(src[co * HWo]), static_cast<Acc>(wsrc[co * taps]), acc);
        }
      }
    }
    gi[static_cast<int64_t>(n) * gs.s0 + static_cast<int64_t>(ci) * gs.s1 +
       static_cast<int64_t>(ih) * gs.s2 + static_cast<int64_t>(iw) * gs.s3] = static_cast<T>(acc);
  }
}

// gi[n, ci, ih, iw] = sum_{z = 0..S-1} ws[z][ci][m], m = (n, ih, iw), in split order.
template <typename T, typename Acc>
__global__ __launch_bounds__(kThreads) void grad_input_split_reduce_kernel(const Acc* __restrict__ ws,
                                                                           T* __restrict__ gi,
                                                                           Geometry g, Strides4 gs,
                                                                           int splits) {
  const int64_t M = g.N * g.H * g.W;
  const int64_t E = g.Cin * M;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < E;
       e += static_cast<int64_t>(gridDim.x) * kThreads) {
    Acc sum = Acc(0);
    for (int z = 0; z < splits; ++z) sum += ws[z * E + e];
    const int64_t ci = e / M, m = e - ci * M;
    const int64_t n = m / (g.H * g.W), r = m - n * (g.H * g.W);
    const int64_t ih = r / g.W, iw = r - ih * g.W;
    gi[n * gs.s0 + ci * gs.s1 + ih * gs.s2 + iw * gs.s3] = static_cast<T>(sum);
  }
}

}  // namespace

namespace {

// One dtype's launch. A function template, so that `if constexpr` discards the modes a
// dtype does not use (inside AT_DISPATCH's lambda it would not).
template <typename scalar_t, int BM, int BN, Mma kMode, typename Idx>
void grad_input_gemm_typed(const at::Tensor& go, const at::Tensor& wt, const Geometry& g,
                           const at::Tensor& grad_input) {
  using Acc = acc_t<scalar_t>;
  const int64_t M = g.N * g.H * g.W;
  const int64_t tiles_n = ceil_div(g.Cin_g, BN);
  TORCH_CHECK(g.groups * tiles_n <= 65535, "convt: too many channel tiles for grid.y");
  TORCH_CHECK(g.Hout < (1 << 30) && g.Wout < (1 << 30), "convt: spatial size too large");
  // Split K while the grid gives fewer than two blocks per SM, keeping >= 8 steps per split
  // and the workspace under 256 MiB.
  const int64_t blocks = ceil_div(M, BM) * g.groups * tiles_n;
  const int64_t steps = g.KH * g.KW * ceil_div(g.Cout_g, kBK);
  int64_t splits = 1;
  if (blocks < 2 * int64_t(sm_count())) {
    splits = std::min(ceil_div(2 * int64_t(sm_count()), blocks), std::max<int64_t>(1, steps / 8));
    splits = std::min(splits, std::max<int64_t>(1, (int64_t(256) << 20) / (int64_t(sizeof(Acc)) * g.Cin * M)));
    splits = std::min<int64_t>(splits, 64);
  }
  const int64_t steps_per_split = ceil_div(steps, splits);
  splits = ceil_div(steps, steps_per_split);
  const dim3 grid(static_cast<unsigned>(ceil_div(M, BM)), static_cast<unsigned>(g.groups * tiles_n),
                  static_cast<unsigned>(splits));
  auto stream = at::cuda::getCurrentCUDAStream();
  at::Tensor ws;
  if (splits > 1) ws = at::empty({splits * g.Cin * M}, go.options().dtype(c10::CppTypeToScalarType<Acc>::value));
  grad_input_gemm_kernel<scalar_t, Acc, Idx, kMode, BM, BN><<<grid, kThreads, 0, stream>>>(
      go.const_data_ptr<scalar_t>(), wt.const_data_ptr<scalar_t>(),
      grad_input.mutable_data_ptr<scalar_t>(), g, strides_of(grad_input), static_cast<int>(tiles_n),
      static_cast<int>(steps_per_split), splits > 1 ? ws.mutable_data_ptr<Acc>() : nullptr);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (splits > 1) {
    const int64_t E = g.Cin * M;
    const int64_t rblocks = std::min<int64_t>(ceil_div(E, kThreads), int64_t(sm_count()) * 16);
    grad_input_split_reduce_kernel<scalar_t, Acc><<<rblocks, kThreads, 0, stream>>>(
        ws.const_data_ptr<Acc>(), grad_input.mutable_data_ptr<scalar_t>(), g, strides_of(grad_input),
        static_cast<int>(splits));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

// True when pixel indices (with a tile of slack) fit int32.
bool gemm_small(const Geometry& g) {
  return fits_int32(g.N * g.H * g.W + 256) && fits_int32(g.N * g.Cout * g.Hout * g.Wout);
}

// Channel extent of the tensor-core tile (pixels are always 128): the smallest of 32 / 64
// / 128 that covers Cin/groups (narrow groups waste few MMA columns). Small grids are
// filled by split-K (grad_input_gemm_typed) rather than narrower tiles (v6 in
// docs/perf-notes-backward.md).
int64_t channel_tile(const Geometry& g) { return g.Cin_g <= 32 ? 32 : g.Cin_g <= 64 ? 64 : 128; }

// int64 index math (over 2^31 pixels) takes the 128 x 64 shape only.
template <typename scalar_t, Mma kMode>
void grad_input_gemm_by_shape(const at::Tensor& go, const at::Tensor& wt, const Geometry& g,
                              const at::Tensor& grad_input) {
  const int64_t bn = channel_tile(g);
  if (!gemm_small(g)) {
    grad_input_gemm_typed<scalar_t, 128, 64, kMode, int64_t>(go, wt, g, grad_input);
  } else if (bn == 32) {
    grad_input_gemm_typed<scalar_t, 128, 32, kMode, int32_t>(go, wt, g, grad_input);
  } else if (bn == 64) {
    grad_input_gemm_typed<scalar_t, 128, 64, kMode, int32_t>(go, wt, g, grad_input);
  } else {
    grad_input_gemm_typed<scalar_t, 128, 128, kMode, int32_t>(go, wt, g, grad_input);
  }
}

// One shape (float64, forced SIMT, 3xTF32: the slow, exact paths).
template <typename scalar_t, Mma kMode, int BM, int BN>
void grad_input_gemm_one(const at::Tensor& go, const at::Tensor& wt, const Geometry& g,
                         const at::Tensor& grad_input) {
  if (gemm_small(g)) {
    grad_input_gemm_typed<scalar_t, BM, BN, kMode, int32_t>(go, wt, g, grad_input);
  } else {
    grad_input_gemm_typed<scalar_t, BM, BN, kMode, int64_t>(go, wt, g, grad_input);
  }
}

// float64 multiplies on CUDA cores; 16-bit types convert exactly to TF32 (one mode);
// float follows `mode` (allow_tf32, 3xTF32, or SIMT when forced for tests).
template <typename scalar_t>
void grad_input_gemm_dispatch(const at::Tensor& go, const at::Tensor& wt, const Geometry& g,
                              const at::Tensor& grad_input, Mma mode) {
  if constexpr (std::is_same_v<scalar_t, double>) {
    grad_input_gemm_one<scalar_t, Mma::kSimt, 64, 64>(go, wt, g, grad_input);
  } else if constexpr (std::is_same_v<scalar_t, float>) {
    if (mode == Mma::kSimt) {
      grad_input_gemm_one<scalar_t, Mma::kSimt, 64, 64>(go, wt, g, grad_input);
    } else if (mode == Mma::k3xTf32) {
      grad_input_gemm_one<scalar_t, Mma::k3xTf32, 128, 64>(go, wt, g, grad_input);
    } else {
      grad_input_gemm_by_shape<scalar_t, Mma::kTf32>(go, wt, g, grad_input);
    }
  } else {
    grad_input_gemm_by_shape<scalar_t, Mma::kTf32>(go, wt, g, grad_input);
  }
}

}  // namespace

void grad_input_gemm(const at::Tensor& go, const at::Tensor& wt, const Geometry& g,
                     const at::Tensor& grad_input, Mma mode) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_grad_input_gemm", [&] {
    grad_input_gemm_dispatch<scalar_t>(go, wt, g, grad_input, mode);
  });
}

void grad_input_direct(const at::Tensor& go, const at::Tensor& w, const Geometry& g,
                       const at::Tensor& grad_input) {
  const int64_t total = g.N * g.Cin * g.H * g.W;
  TORCH_CHECK(g.Hout < (1 << 30) && g.Wout < (1 << 30), "convt: spatial size too large");
  const int64_t blocks = std::min<int64_t>(ceil_div(total, kThreads), int64_t(sm_count()) * 64);
  const bool small = fits_int32(total + int64_t(blocks) * kThreads);
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_grad_input_direct", [&] {
    using Acc = acc_t<scalar_t>;
    if (small) {
      grad_input_direct_kernel<scalar_t, Acc, int32_t><<<blocks, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
          grad_input.mutable_data_ptr<scalar_t>(), g, strides_of(grad_input));
    } else {
      grad_input_direct_kernel<scalar_t, Acc, int64_t><<<blocks, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
          grad_input.mutable_data_ptr<scalar_t>(), g, strides_of(grad_input));
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace bwd
}  // namespace convt
