// GEMM + col2im forward of conv_transpose2d, for few-tap, channel-heavy layers on small
// images (U-Net / Mask R-CNN upsampling with kernel == stride, DCGAN generator layers).
//
// There the convolution is a plain matrix product followed by a scatter:
//   cols[n] = W^T X[n]    W^T: [Cout*KH*KW, Cin], X[n]: [Cin, H*W]   (cuBLAS via at::matmul)
//   out[n, co, oy, ox] = bias[co] + sum over the taps (ky, kx) reaching (oy, ox) of
//                        cols[n, (co*KH + ky)*KW + kx, iy*W + ix]          (gather kernel)
// cuBLAS runs these GEMMs (K = Cin large, M = Cout*taps) near its peak, and the cols
// round trip costs about KH*KW*H*W / (Hout*Wout) times the output (1 when kernel ==
// stride), so the dispatcher uses this family only where that ratio is small. The gather
// visits taps with the same phase walk as the direct kernel and writes every output
// exactly once (no atomics, deterministic). fp32 GEMMs follow cuBLAS's own TF32 setting
// (torch.backends.cuda.matmul.allow_tf32, off by default), so they are fp32-accurate.
// Batches are processed in slices so that the cols workspace stays below kMaxColsElems.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>

#include "forward_launch.cuh"
#include "tap_walk.cuh"

namespace convt {
namespace fwd {
namespace {

constexpr int64_t kMaxColsElems = int64_t(48) << 20;  // workspace per slice (elements)
struct GatherParams {
  AxisTaps y, x;
  int H, W, Hout, Wout, KH, KW, Cout;
  int64_t out_s[4];
};

// index_t: int32 when the slice has < 2^31 outputs (64-bit division is a slow routine).
template <typename T, typename index_t>
__global__ void col2im_gather_kernel(const T* __restrict__ cols, const T* __restrict__ bias,
                                     T* __restrict__ out, const GatherParams p, int n0,
                                     index_t total) {
  using acc_t = at::opmath_type<T>;
  const index_t idx = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  // idx = ((nl * Cout + co) * Hout + oy) * Wout + ox, ox fastest (coalesced for NCHW).
  const int ox = static_cast<int>(idx % p.Wout);
  const index_t t1 = idx / p.Wout;
  const int oy = static_cast<int>(t1 % p.Hout);
  const index_t t2 = t1 / p.Hout;
  const int co = static_cast<int>(t2 % p.Cout);
  const int64_t nl = t2 / p.Cout;
  const TapStart ys = first_tap(p.y, oy), xs = first_tap(p.x, ox);
  const int64_t hw = static_cast<int64_t>(p.H) * p.W;
  const T* c = cols + (nl * p.Cout + co) * p.KH * p.KW * hw;
  acc_t acc = bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0);
  for_each_tap(p.y, ys, p.H, [&](int ky, int iy) {
    for_each_tap(p.x, xs, p.W, [&](int kx, int ix) {
      acc += static_cast<acc_t>(c[(ky * p.KW + kx) * hw + static_cast<int64_t>(iy) * p.W + ix]);
    });
  });
  out[(n0 + nl) * p.out_s[0] + co * p.out_s[1] + oy * p.out_s[2] + ox * p.out_s[3]] =
      static_cast<T>(acc);
}

}  // namespace

bool gemm_col2im_supported(const Geometry& g) {
  if (g.groups != 1 || g.SH > kMaxTapTable || g.SW > kMaxTapTable) return false;
  const int64_t lim = int64_t(1) << 30;
  if (g.H >= lim || g.W >= lim || g.Hout >= lim || g.Wout >= lim) return false;
  return g.Cout * g.KH * g.KW * g.H * g.W <= kMaxColsElems;  // one image's cols
}

bool gemm_col2im_suitable(const Geometry& g, at::ScalarType dtype) {
  if (!gemm_col2im_supported(g)) return false;
  // cols traffic relative to the output, and a channel count that makes the GEMM worth it
  // (measured on the suite, docs/perf-notes-forward.md). fp32 GEMMs run in full fp32
  // (cuBLAS's TF32 flag is off by default), so fp32 takes this path only when there is no
  // tap overlap at all (kernel == stride: the gather is a pure permutation).
  const double ratio = double(g.KH * g.KW) * double(g.H * g.W) / double(g.Hout * g.Wout);
  if (dtype == at::kDouble) return ratio <= 4.5 && g.Cin >= 64;
  if (dtype == at::kFloat)
    return g.KH == g.SH && g.KW == g.SW && g.PH == 0 && g.PW == 0 && g.DH == 1 && g.DW == 1 &&
           g.Cin >= 256;
  return ratio <= 4.5 && g.Cin >= 256;
}

void launch_gemm_col2im(const at::Tensor& input, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const Geometry& g,
                        const at::Tensor& output) {
  const at::Tensor x = input.contiguous();
  const int64_t kk = g.KH * g.KW;
  const at::Tensor wt = weight.contiguous().view({g.Cin, g.Cout * kk}).t();  // [Cout*kk, Cin]
  const at::Tensor b = (bias.has_value() && bias->defined()) ? bias->contiguous() : at::Tensor();

  GatherParams p{};
  p.H = static_cast<int>(g.H), p.W = static_cast<int>(g.W);
  p.Hout = static_cast<int>(g.Hout), p.Wout = static_cast<int>(g.Wout);
  p.KH = static_cast<int>(g.KH), p.KW = static_cast<int>(g.KW);
  p.Cout = static_cast<int>(g.Cout);
  p.y = make_axis_taps(g.KH, g.SH, g.PH, g.DH);
  p.x = make_axis_taps(g.KW, g.SW, g.PW, g.DW);
  for (int i = 0; i < 4; ++i) p.out_s[i] = output.stride(i);

  const int64_t cols_per_image = g.Cout * kk * g.H * g.W;
  const int64_t slice = std::max<int64_t>(1, std::min<int64_t>(g.N, kMaxColsElems / cols_per_image));
  auto stream = at::cuda::getCurrentCUDAStream();
  for (int64_t n0 = 0; n0 < g.N; n0 += slice) {
    const int64_t nb = std::min(slice, g.N - n0);
    const at::Tensor xs = x.narrow(0, n0, nb).view({nb, g.Cin, g.H * g.W});
    // One strided-batched cuBLAS GEMM; the expanded W^T has batch stride 0 (no copy).
    const at::Tensor cols =
        at::bmm(wt.unsqueeze(0).expand({nb, wt.size(0), wt.size(1)}), xs).contiguous();
    const int64_t total = nb * g.Cout * g.Hout * g.Wout;
    const int threads = 256;
    const int64_t blocks = (total + threads - 1) / threads;
    AT_DISPATCH_FLOATING_TYPES_AND2(
        at::kHalf, at::kBFloat16, input.scalar_type(), "convt_forward_col2im", [&] {
          const scalar_t* bp = b.defined() ? b.data_ptr<scalar_t>() : nullptr;
          if (total < (int64_t(1) << 31)) {
            col2im_gather_kernel<scalar_t, int><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
                cols.data_ptr<scalar_t>(), bp, output.data_ptr<scalar_t>(), p,
                static_cast<int>(n0), static_cast<int>(total));
          } else {
            col2im_gather_kernel<scalar_t, int64_t><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
                cols.data_ptr<scalar_t>(), bp, output.data_ptr<scalar_t>(), p,
                static_cast<int>(n0), total);
          }
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
  }
}

}  // namespace fwd
}  // namespace convt
