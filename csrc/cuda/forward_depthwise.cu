// Depthwise forward of conv_transpose2d (one input channel per group, any channel
// multiplier): a bandwidth kernel.
//
// With Cin_g == 1 each output element is a sum of at most ceil(KH/step_y) *
// ceil(KW/step_x) products, so the floor is writing the output (the input is
// 1/(SH*SW) of it). The generic direct kernel spends ~20x that floor on per-element
// index math and scalar stores (docs/perf-notes-forward.md). Here each thread owns
// VEC = 16 bytes of consecutive outputs along the output's unit-stride axis and writes
// them with one vector store:
//   - rows kernel (NCHW-like output, stride(3) == 1): VEC consecutive ox of one
//     (n, co, oy) row. The x tap walk of each element is computed once per thread and
//     reused for every row the thread visits; the y walk once per row.
//   - channels kernel (channels_last output, stride(1) == 1): VEC consecutive output
//     channels of one pixel; the tap walk is shared by all of them.
// Input and weight reads are scalar and hit L1/L2 (neighbouring threads read
// neighbouring inputs; the weight is tiny). fp32 accumulation for half/bf16 (opmath).
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>

#include "forward_launch.cuh"
#include "tap_walk.cuh"

namespace convt {
namespace fwd {
namespace {

struct DepthwiseParams {
  AxisTaps y, x;
  int H, W, Hout, Wout, C, Cout_g;  // C: output channels
  int rows;                         // rows kernel: N*C*Hout; channels kernel: N*Hout*Wout
  int vecs;                         // vectors per row: ceil(Wout/VEC) or ceil(C/VEC)
  int64_t in_s[4], w_s[4], out_s[4];
};

template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

// Threads: x over the vectors of a row, y over rows (looped past the grid limit).
constexpr int kBlockX = 32, kBlockY = 8;

template <typename T, int VEC, bool kVectorStore>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    depthwise_rows_kernel(const T* __restrict__ in, const T* __restrict__ w,
                          const T* __restrict__ bias, T* __restrict__ out, const DepthwiseParams p) {
  using acc_t = at::opmath_type<T>;
  const int v = blockIdx.x * kBlockX + threadIdx.x;
  if (v >= p.vecs) return;
  const int ox0 = v * VEC;
  TapStart xs[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) xs[j] = first_tap(p.x, ox0 + j);

  for (int row = blockIdx.y * kBlockY + threadIdx.y; row < p.rows; row += gridDim.y * kBlockY) {
    const int oy = row % p.Hout;
    const int nc = row / p.Hout;
    const int co = nc % p.C;
    const int n = nc / p.C;
    const int ci = co / p.Cout_g;  // the group's single input channel
    const T* in_c = in + n * p.in_s[0] + ci * p.in_s[1];
    const T* w_c = w + ci * p.w_s[0] + (co - ci * p.Cout_g) * p.w_s[1];
    const acc_t b = bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0);
    acc_t acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = b;

    const TapStart ys = first_tap(p.y, oy);
    int iy = ys.in;
    for (int ky = ys.tap; ky < p.y.kernel; ky += p.y.step, iy -= p.y.in_step) {
      if (iy >= p.H) continue;
      if (iy < 0) break;
      const T* in_row = in_c + iy * p.in_s[2];
      const T* w_row = w_c + ky * p.w_s[2];
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        int ix = xs[j].in;
        for (int kx = xs[j].tap; kx < p.x.kernel; kx += p.x.step, ix -= p.x.in_step) {
          if (ix >= p.W) continue;
          if (ix < 0) break;
          acc[j] += static_cast<acc_t>(in_row[ix * p.in_s[3]]) *
                    static_cast<acc_t>(__ldg(w_row + kx * p.w_s[3]));
        }
      }
    }

    T* o = out + n * p.out_s[0] + co * p.out_s[1] + oy * p.out_s[2] + ox0;
    if (kVectorStore && ox0 + VEC <= p.Wout) {
      Pack<T, VEC> pk;
#pragma unroll
      for (int j = 0; j < VEC; ++j) pk.v[j] = static_cast<T>(acc[j]);
      *reinterpret_cast<Pack<T, VEC>*>(o) = pk;
    } else {
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        if (ox0 + j < p.Wout) o[j * p.out_s[3]] = static_cast<T>(acc[j]);
    }
  }
}

template <typename T, int VEC, bool kVectorStore>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    depthwise_channels_kernel(const T* __restrict__ in, const T* __restrict__ w,
                              const T* __restrict__ bias, T* __restrict__ out,
                              const DepthwiseParams p) {
  using acc_t = at::opmath_type<T>;
  const int v = blockIdx.x * kBlockX + threadIdx.x;
  if (v >= p.vecs) return;
  const int co0 = v * VEC;
  // Per element: offsets of its input channel and weight slice (fixed for the thread).
  int64_t in_off[VEC], w_off[VEC];
  acc_t b[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) {
    const int co = min(co0 + j, p.C - 1);  // tail elements compute a copy, never stored
    const int ci = co / p.Cout_g;
    in_off[j] = ci * p.in_s[1];
    w_off[j] = ci * p.w_s[0] + (co - ci * p.Cout_g) * p.w_s[1];
    b[j] = bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0);
  }

  for (int row = blockIdx.y * kBlockY + threadIdx.y; row < p.rows; row += gridDim.y * kBlockY) {
    const int ox = row % p.Wout;
    const int t = row / p.Wout;
    const int oy = t % p.Hout;
    const int n = t / p.Hout;
    acc_t acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = b[j];

    const TapStart ys = first_tap(p.y, oy);
    const TapStart xs = first_tap(p.x, ox);
    int iy = ys.in;
    for (int ky = ys.tap; ky < p.y.kernel; ky += p.y.step, iy -= p.y.in_step) {
      if (iy >= p.H) continue;
      if (iy < 0) break;
      int ix = xs.in;
      for (int kx = xs.tap; kx < p.x.kernel; kx += p.x.step, ix -= p.x.in_step) {
        if (ix >= p.W) continue;
        if (ix < 0) break;
        const T* ip = in + n * p.in_s[0] + iy * p.in_s[2] + ix * p.in_s[3];
        const int64_t wk = ky * p.w_s[2] + kx * p.w_s[3];
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          acc[j] += static_cast<acc_t>(ip[in_off[j]]) * static_cast<acc_t>(__ldg(w + w_off[j] + wk));
      }
    }

    T* o = out + n * p.out_s[0] + oy * p.out_s[2] + ox * p.out_s[3] + co0;
    if (kVectorStore && co0 + VEC <= p.C) {
      Pack<T, VEC> pk;
#pragma unroll
      for (int j = 0; j < VEC; ++j) pk.v[j] = static_cast<T>(acc[j]);
      *reinterpret_cast<Pack<T, VEC>*>(o) = pk;
    } else {
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        if (co0 + j < p.C) o[j * p.out_s[1]] = static_cast<T>(acc[j]);
    }
  }
}

template <typename T>
void launch_typed(const at::Tensor& input, const at::Tensor& weight, const T* bias,
                  const Geometry& g, const at::Tensor& output, bool along_channels) {
  constexpr int VEC = 16 / sizeof(T);  // one 16-byte store per thread
  DepthwiseParams p{};
  p.y = make_axis_taps(g.KH, g.SH, g.PH, g.DH);
  p.x = make_axis_taps(g.KW, g.SW, g.PW, g.DW);
  p.H = static_cast<int>(g.H), p.W = static_cast<int>(g.W);
  p.Hout = static_cast<int>(g.Hout), p.Wout = static_cast<int>(g.Wout);
  p.C = static_cast<int>(g.Cout), p.Cout_g = static_cast<int>(g.Cout_g);
  for (int i = 0; i < 4; ++i) {
    p.in_s[i] = input.stride(i);
    p.w_s[i] = weight.stride(i);
    p.out_s[i] = output.stride(i);
  }
  const int64_t rows = along_channels ? g.N * g.Hout * g.Wout : g.N * g.Cout * g.Hout;
  const int64_t vecs = along_channels ? (g.Cout + VEC - 1) / VEC : (g.Wout + VEC - 1) / VEC;
  p.rows = static_cast<int>(rows), p.vecs = static_cast<int>(vecs);

  // The vector store needs 16-byte aligned addresses for every thread's first element.
  const int64_t* s = p.out_s;
  const bool aligned = reinterpret_cast<std::uintptr_t>(output.data_ptr()) % 16 == 0 &&
                       s[0] % VEC == 0 &&
                       (along_channels ? (s[2] % VEC == 0 && s[3] % VEC == 0)
                                       : (s[1] % VEC == 0 && s[2] % VEC == 0));
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid(static_cast<unsigned>((vecs + kBlockX - 1) / kBlockX),
                  static_cast<unsigned>(std::min<int64_t>((rows + kBlockY - 1) / kBlockY, 65535)));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const T* in = input.data_ptr<T>();
  const T* wt = weight.data_ptr<T>();
  T* out = output.data_ptr<T>();
  if (along_channels) {
    if (aligned)
      depthwise_channels_kernel<T, VEC, true><<<grid, block, 0, stream>>>(in, wt, bias, out, p);
    else
      depthwise_channels_kernel<T, VEC, false><<<grid, block, 0, stream>>>(in, wt, bias, out, p);
  } else {
    if (aligned)
      depthwise_rows_kernel<T, VEC, true><<<grid, block, 0, stream>>>(in, wt, bias, out, p);
    else
      depthwise_rows_kernel<T, VEC, false><<<grid, block, 0, stream>>>(in, wt, bias, out, p);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool depthwise_supported(const Geometry& g, const at::Tensor& output) {
  // 32-bit index math inside (tap_walk.cuh); memory offsets are 64-bit.
  const int64_t lim = int64_t(1) << 30;
  const bool extents_fit = g.H < lim && g.W < lim && g.Hout + g.PH < lim && g.Wout + g.PW < lim &&
                           g.KH * g.DH < lim && g.KW * g.DW < lim && g.Cout < lim &&
                           g.N * g.Cout * g.Hout < (int64_t(1) << 31) &&
                           g.N * g.Hout * g.Wout < (int64_t(1) << 31);
  return g.Cin_g == 1 && extents_fit && (output.stride(3) == 1 || output.stride(1) == 1);
}

void launch_depthwise(const at::Tensor& input, const at::Tensor& weight,
                      const std::optional<at::Tensor>& bias, const Geometry& g,
                      const at::Tensor& output) {
  TORCH_CHECK(depthwise_supported(g, output), "conv_transpose2d (CUDA depthwise kernel): unsupported problem");
  // Vectors along the unit-stride axis of the output: channels for channels_last.
  const bool along_channels = output.stride(3) != 1;
  std::optional<at::Tensor> b = bias;
  if (b.has_value() && b->defined() && b->stride(0) != 1) b = b->contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, input.scalar_type(), "convt_forward_depthwise", [&] {
        const scalar_t* bias_ptr = (b.has_value() && b->defined()) ? b->data_ptr<scalar_t>() : nullptr;
        launch_typed<scalar_t>(input, weight, bias_ptr, g, output, along_channels);
      });
}

}  // namespace fwd
}  // namespace convt
