// Direct (gather) forward kernel of conv_transpose2d: the correctness fallback for
// every dtype and layout, and the bandwidth kernel for small per-group K.
//
// One thread computes one output pixel (n, oy, ox) for COB consecutive output
// channels of one group. Along each axis it visits only the taps that reach its
// output coordinate: the first one from tap_walk.cuh's table, then every
// stride/gcd(stride, dilation)-th, so there is no modulo test per tap. Threads are
// laid out with ox fastest, so stores are coalesced for NCHW outputs; input reads of
// neighbouring threads hit neighbouring addresses (cached). Accumulation in
// at::opmath_type (fp32 for half/bf16/float, fp64 for double). Offsets are int64.
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "forward_launch.cuh"
#include "tap_walk.cuh"

namespace convt {
namespace fwd {
namespace {

// 32-bit geometry (checked on the host): the per-thread index math runs once per
// output pixel, and 64-bit division is ~10x the cost of 32-bit on the GPU; memory
// offsets are still formed in 64 bits. The tap walk is tap_walk.cuh's.
struct DirectParams {
  AxisTaps y, x;
  int H, W, Hout, Wout;
  int Cin_g, Cout_g, groups, co_blocks;
  int rows;                  // N * groups * co_blocks
  int64_t in_s[4];           // input strides (N, C, H, W)
  int64_t w_s[4];            // weight strides (Cin, Cout_g, KH, KW)
  int64_t out_s[4];          // output strides (N, C, H, W)
};

template <typename scalar_t, int COB>
__global__ void direct_kernel(const scalar_t* __restrict__ in, const scalar_t* __restrict__ w,
                              const scalar_t* __restrict__ bias, scalar_t* __restrict__ out,
                              const DirectParams p) {
  using acc_t = at::opmath_type<scalar_t>;
  const int pixels = p.Hout * p.Wout;
  const int pix = blockIdx.x * blockDim.x + threadIdx.x;
  if (pix >= pixels) return;
  const int oy = pix / p.Wout;
  const int ox = pix - oy * p.Wout;
  // Taps along each axis: first tap and its input coordinate, then every step-th.
  const TapStart ys = first_tap(p.y, oy), xs = first_tap(p.x, ox);

  // grid y: (n, group, co block), co block fastest; looped when over the grid limit.
  for (int ny = blockIdx.y; ny < p.rows; ny += gridDim.y) {
    const int ng = ny / p.co_blocks;  // 32-bit: rows < 2^31 (checked on the host)
    const int cob = ny - ng * p.co_blocks;
    const int64_t n = ng / p.groups;
    const int grp = ng - static_cast<int>(n) * p.groups;
    const int co_local0 = cob * COB;  // within the group

    acc_t acc[COB];
#pragma unroll
    for (int j = 0; j < COB; ++j) acc[j] = acc_t(0);

    const int64_t ci0 = static_cast<int64_t>(grp) * p.Cin_g;
    const scalar_t* in_n = in + n * p.in_s[0] + ci0 * p.in_s[1];
    const scalar_t* w_g = w + ci0 * p.w_s[0] + co_local0 * p.w_s[1];

    for_each_tap(p.y, ys, p.H, [&](int ky, int iy) {
      for_each_tap(p.x, xs, p.W, [&](int kx, int ix) {
        const scalar_t* ip = in_n + iy * p.in_s[2] + ix * p.in_s[3];
        const scalar_t* wp = w_g + ky * p.w_s[2] + kx * p.w_s[3];
        for (int ci = 0; ci < p.Cin_g; ++ci) {
          const acc_t x = static_cast<acc_t>(ip[ci * p.in_s[1]]);
          const scalar_t* wc = wp + ci * p.w_s[0];
#pragma unroll
          for (int j = 0; j < COB; ++j) {
            if (COB == 1 || co_local0 + j < p.Cout_g) {
              acc[j] += x * static_cast<acc_t>(__ldg(wc + j * p.w_s[1]));
            }
          }
        }
      });
    });

    scalar_t* op = out + n * p.out_s[0] + oy * p.out_s[2] + ox * p.out_s[3];
#pragma unroll
    for (int j = 0; j < COB; ++j) {
      const int co_local = co_local0 + j;
      if (COB > 1 && co_local >= p.Cout_g) break;
      const int64_t co = static_cast<int64_t>(grp) * p.Cout_g + co_local;
      acc_t v = acc[j];
      if (bias != nullptr) v += static_cast<acc_t>(bias[co]);
      op[co * p.out_s[1]] = static_cast<scalar_t>(v);
    }
  }
}

template <typename scalar_t, int COB>
void launch_direct_typed(const at::Tensor& input, const at::Tensor& weight,
                         const std::optional<at::Tensor>& bias, const Geometry& g,
                         const at::Tensor& output) {
  DirectParams p{};
  p.y = make_axis_taps(g.KH, g.SH, g.PH, g.DH);
  p.x = make_axis_taps(g.KW, g.SW, g.PW, g.DW);
  p.H = static_cast<int>(g.H), p.W = static_cast<int>(g.W);
  p.Hout = static_cast<int>(g.Hout), p.Wout = static_cast<int>(g.Wout);
  p.Cin_g = static_cast<int>(g.Cin_g), p.Cout_g = static_cast<int>(g.Cout_g);
  p.groups = static_cast<int>(g.groups);
  for (int i = 0; i < 4; ++i) {
    p.in_s[i] = input.stride(i);
    p.w_s[i] = weight.stride(i);
    p.out_s[i] = output.stride(i);
  }
  p.co_blocks = static_cast<int>((g.Cout_g + COB - 1) / COB);
  const int threads = 256;
  const int64_t pixels = g.Hout * g.Wout;
  const int64_t blocks_x = (pixels + threads - 1) / threads;
  const int64_t blocks_y = g.N * g.groups * p.co_blocks;
  TORCH_CHECK(blocks_y < (int64_t(1) << 31) - 65536,
              "conv_transpose2d (CUDA direct kernel): too many images x channels");
  p.rows = static_cast<int>(blocks_y);
  // 32-bit geometry: every extent (and (H+padding)*stride style intermediates) fits easily
  // for any tensor that fits in memory per image plane; checked here anyway.
  const int64_t lim = int64_t(1) << 30;
  TORCH_CHECK(pixels < lim && g.H < lim && g.W < lim && g.KH * g.DH < lim &&
                  g.KW * g.DW < lim && g.Hout + g.PH < lim && g.Wout + g.PW < lim &&
                  g.Cin_g < lim && g.Cout_g < lim && g.groups < lim,
              "conv_transpose2d (CUDA direct kernel): spatial extents beyond 2^30 are not supported");
  TORCH_CHECK(blocks_x < (int64_t(1) << 31),
              "conv_transpose2d (CUDA direct kernel): problem too large for the launch grid (",
              blocks_x, " x ", blocks_y, " blocks)");
  const scalar_t* bias_ptr =
      (bias.has_value() && bias->defined()) ? bias->data_ptr<scalar_t>() : nullptr;
  direct_kernel<scalar_t, COB>
      <<<dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(std::min<int64_t>(blocks_y, 65535))), threads, 0,
         at::cuda::getCurrentCUDAStream()>>>(input.data_ptr<scalar_t>(),
                                             weight.data_ptr<scalar_t>(), bias_ptr,
                                             output.data_ptr<scalar_t>(), p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

void launch_direct(const at::Tensor& input, const at::Tensor& weight,
                   const std::optional<at::Tensor>& bias, const Geometry& g,
                   const at::Tensor& output) {
  // Bias must be 1-D with unit stride for bias[co]; it is tiny, so copy if needed.
  std::optional<at::Tensor> b = bias;
  if (b.has_value() && b->defined() && b->stride(0) != 1) b = b->contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, input.scalar_type(), "convt_forward_direct", [&] {
        // More channels per thread reuse each input load, up to register pressure.
        if (g.Cout_g >= 8) {
          launch_direct_typed<scalar_t, 8>(input, weight, b, g, output);
        } else if (g.Cout_g >= 4) {
          launch_direct_typed<scalar_t, 4>(input, weight, b, g, output);
        } else {
          launch_direct_typed<scalar_t, 1>(input, weight, b, g, output);
        }
      });
}

}  // namespace fwd
}  // namespace convt
