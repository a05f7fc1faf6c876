// Depthwise forward of conv_transpose2d (one input channel per group, any channel
// multiplier): a bandwidth kernel.
//
// With Cin_g == 1 each output element is a sum of at most ceil(KH/step_y) *
// ceil(KW/step_x) products, so the floor is writing the output (the input is
// 1/(SH*SW) of it). The generic direct kernel spends ~20x that floor on per-element
// index math and scalar stores (docs/perf-notes-forward.md). Here each thread owns
// VEC = 16 bytes of consecutive outputs along the output's unit-stride axis and writes
// them with one vector store, and the index math is hoisted out of the per-output work:
//   - rows kernel (NCHW-like output, stride(3) == 1): VEC consecutive ox of one
//     (n, co, oy) row. A block works on one (n, co) plane, so the channel, its weights
//     and the x tap walk of each element are fixed per thread; a row costs one y walk.
//     Common x geometries (kernel 2/3/4 with stride 2, kernel 3 with stride 1, no
//     dilation) have a variant with that geometry fixed at compile time.
//   - channels kernel (channels_last output, stride(1) == 1): VEC consecutive output
//     channels of one pixel, sharing one tap walk. A block works along one output row;
//     the span's weights sit in shared memory as [tap][channel] (16-byte reads).
// Input reads are L1/L2 hits (neighbouring threads read neighbouring inputs). fp32
// accumulation for half/bf16 (opmath). Measured: docs/perf-notes-forward.md.
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "forward_launch.cuh"
#include "pack.cuh"
#include "tap_walk.cuh"

namespace convt {
namespace fwd {
namespace {

struct DepthwiseParams {
  AxisTaps y, x;
  int H, W, Hout, Wout, C, Cout_g;  // C: output channels
  int rows;                         // channels kernel: output rows N * Hout
  int vecs;                         // vectors per row: ceil(Wout/VEC) or ceil(C/VEC)
  int xblocks;                      // blocks along those vectors
  int64_t in_s[4], w_s[4], out_s[4];
};

constexpr int kThreads = 256;
// Weights staged in shared memory by the channels kernel, at most this many bytes.
constexpr int kMaxWeightSmem = 48 * 1024;

// Writes a thread's VEC results: one 16-byte store when allowed and all VEC are in range,
// else element by element (`count` of them in range, `stride` apart).
template <typename T, int VEC, bool kVectorStore, typename A>
__device__ __forceinline__ void store_results(T* o, const A (&acc)[VEC], int count, int64_t stride) {
  if (kVectorStore && count >= VEC) {
    Pack<T, VEC> pk;
#pragma unroll
    for (int j = 0; j < VEC; ++j) pk.v[j] = static_cast<T>(acc[j]);
    *reinterpret_cast<Pack<T, VEC>*>(o) = pk;
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      if (j < count) o[j * stride] = static_cast<T>(acc[j]);
  }
}

// A rows-kernel thread's (n, co) plane: grid.x = planes * xblocks, blockDim.x threads along
// the plane's x vectors. `valid` is false for threads past the last vector.
template <typename T, int VEC>
struct PlaneThread {
  const T* in_c;  // the group's single input channel
  const T* w_c;   // its weight slice [KH, KW]
  T* out_c;
  at::opmath_type<T> bias;
  int ox0;
  bool valid;
};

template <typename T, int VEC>
__device__ __forceinline__ PlaneThread<T, VEC> plane_thread(const DepthwiseParams& p, const T* in,
                                                           const T* w, const T* bias, T* out) {
  const int plane = blockIdx.x / p.xblocks;  // n * C + co
  const int v = (blockIdx.x - plane * p.xblocks) * blockDim.x + threadIdx.x;
  const int n = plane / p.C;
  const int co = plane - n * p.C;
  const int ci = co / p.Cout_g;
  using acc_t = at::opmath_type<T>;
  return {in + n * p.in_s[0] + ci * p.in_s[1], w + ci * p.w_s[0] + (co - ci * p.Cout_g) * p.w_s[1],
          out + n * p.out_s[0] + co * p.out_s[1], bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0),
          v * VEC, v < p.vecs};
}

// NCHW-like output. Block: blockDim.x threads along the x vectors of one (n, co) plane,
// blockDim.y along rows; grid.y = bands of rows (each thread walks its rows with step
// gridDim.y * blockDim.y). (n, co) and the x taps are fixed per thread, so a row costs
// one y tap walk plus the products.
template <typename T, int VEC, bool kVectorStore>
__global__ void __launch_bounds__(kThreads)
    depthwise_rows_kernel(const T* __restrict__ in, const T* __restrict__ w,
                          const T* __restrict__ bias, T* __restrict__ out, const DepthwiseParams p) {
  using acc_t = at::opmath_type<T>;
  const PlaneThread<T, VEC> t = plane_thread<T, VEC>(p, in, w, bias, out);
  if (!t.valid) return;
  TapStart xs[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) xs[j] = first_tap(p.x, t.ox0 + j);

  for (int oy = blockIdx.y * blockDim.y + threadIdx.y; oy < p.Hout; oy += gridDim.y * blockDim.y) {
    acc_t acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = t.bias;
    for_each_tap(p.y, first_tap(p.y, oy), p.H, [&](int ky, int iy) {
      const T* in_row = t.in_c + iy * p.in_s[2];
      const T* w_row = t.w_c + ky * p.w_s[2];
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        for_each_tap(p.x, xs[j], p.W, [&](int kx, int ix) {
          acc[j] += static_cast<acc_t>(in_row[ix * p.in_s[3]]) * static_cast<acc_t>(__ldg(w_row + kx * p.w_s[3]));
        });
      }
    });
    store_results<T, VEC, kVectorStore>(t.out_c + oy * p.out_s[2] + t.ox0, acc, p.Wout - t.ox0, p.out_s[3]);
  }
}

// The rows kernel for the common x geometries (kernel width KW, stride SW, dilation 1),
// fixed at compile time with RB = padding mod SW. Element j of a thread's vector gets
// tap kx from input column b0 + (RB + j - kx) / SW when RB + j - kx is a multiple of SW,
// b0 = (ox0 + padding) / SW: all of that is known at compile time once the loops are
// unrolled, so a row is a few loads of the input columns it needs (NCOL of them,
// bounds-checked once per thread), KW weight loads and the products, with no branches.
// (floor_div: geometry.h.)

template <typename T, int VEC, int KW, int SW, int RB, bool kVectorStore>
__global__ void __launch_bounds__(kThreads)
    depthwise_rows_fixed_kernel(const T* __restrict__ in, const T* __restrict__ w,
                                const T* __restrict__ bias, T* __restrict__ out, const DepthwiseParams p) {
  using acc_t = at::opmath_type<T>;
  constexpr int COL_LO = floor_div(RB - (KW - 1), SW), COL_HI = floor_div(RB + VEC - 1, SW);
  constexpr int NCOL = COL_HI - COL_LO + 1;
  const PlaneThread<T, VEC> t = plane_thread<T, VEC>(p, in, w, bias, out);
  if (!t.valid) return;
  const int b0 = (t.ox0 + p.x.padding) / SW;
  bool col_ok[NCOL];
  int64_t col_off[NCOL];
#pragma unroll
  for (int m = 0; m < NCOL; ++m) {
    const int ix = b0 + COL_LO + m;
    col_ok[m] = ix >= 0 && ix < p.W;
    col_off[m] = col_ok[m] ? ix * p.in_s[3] : 0;
  }

  for (int oy = blockIdx.y * blockDim.y + threadIdx.y; oy < p.Hout; oy += gridDim.y * blockDim.y) {
    acc_t acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = t.bias;
    for_each_tap(p.y, first_tap(p.y, oy), p.H, [&](int ky, int iy) {
      const T* in_row = t.in_c + iy * p.in_s[2];
      const T* w_row = t.w_c + ky * p.w_s[2];
      acc_t xin[NCOL], wk[KW];
#pragma unroll
      for (int m = 0; m < NCOL; ++m) xin[m] = col_ok[m] ? static_cast<acc_t>(in_row[col_off[m]]) : acc_t(0);
#pragma unroll
      for (int kx = 0; kx < KW; ++kx) wk[kx] = static_cast<acc_t>(__ldg(w_row + kx * p.w_s[3]));
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) {
          const int num = RB + j - kx;  // compile-time after unrolling
          if ((num % SW + SW) % SW == 0) acc[j] += xin[floor_div(num, SW) - COL_LO] * wk[kx];
        }
      }
    });
    store_results<T, VEC, kVectorStore>(t.out_c + oy * p.out_s[2] + t.ox0, acc, p.Wout - t.ox0, p.out_s[3]);
  }
}

// channels_last output. Block: blockDim.x threads along channel vectors (a span of
// blockDim.x * VEC channels), blockDim.y along the pixels of one output row; grid.x =
// xblocks, grid.y = output rows (n, oy), looped past the grid limit. The span's weights
// are staged in shared memory as [tap][channel], so a thread reads its VEC channels of a
// tap with one 16-byte load (in global memory they are KH*KW elements apart). With
// kVectorLoad (multiplier 1, unit-stride aligned channels) the input is read the same way.
template <typename T, int VEC, bool kVectorStore, bool kVectorLoad>
__global__ void __launch_bounds__(kThreads)
    depthwise_channels_kernel(const T* __restrict__ in, const T* __restrict__ w,
                              const T* __restrict__ bias, T* __restrict__ out,
                              const DepthwiseParams p, bool weights_in_smem) {
  using acc_t = at::opmath_type<T>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* wsm = reinterpret_cast<T*>(smem_raw);
  const int span = blockDim.x * VEC;
  const int c_blk0 = blockIdx.x * span;
  const int taps = p.y.kernel * p.x.kernel;
  if (weights_in_smem) {
    for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < taps * span; i += blockDim.x * blockDim.y) {
      const int tap = i / span;
      const int co = min(c_blk0 + (i - tap * span), p.C - 1);
      const int ci = co / p.Cout_g;
      const int ky = tap / p.x.kernel;
      wsm[i] = w[ci * p.w_s[0] + (co - ci * p.Cout_g) * p.w_s[1] + ky * p.w_s[2] +
                 (tap - ky * p.x.kernel) * p.w_s[3]];
    }
    __syncthreads();
  }
  const int co0 = c_blk0 + threadIdx.x * VEC;
  if (co0 >= p.C) return;  // after the only barrier
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
  for (int r = blockIdx.y; r < p.rows; r += gridDim.y) {
    const int n = r / p.Hout;
    const int oy = r - n * p.Hout;
    const TapStart ys = first_tap(p.y, oy);
    const T* in_n = in + n * p.in_s[0];
    T* out_row = out + n * p.out_s[0] + oy * p.out_s[2] + co0;
    for (int ox = threadIdx.y; ox < p.Wout; ox += blockDim.y) {
      acc_t acc[VEC];
#pragma unroll
      for (int j = 0; j < VEC; ++j) acc[j] = b[j];
      const TapStart xs = first_tap(p.x, ox);
      for_each_tap(p.y, ys, p.H, [&](int ky, int iy) {
        for_each_tap(p.x, xs, p.W, [&](int kx, int ix) {
          const T* ip = in_n + iy * p.in_s[2] + ix * p.in_s[3];
          Pack<T, VEC> xv, wv;
          if (kVectorLoad) {
            xv = *reinterpret_cast<const Pack<T, VEC>*>(ip + co0);
          } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) xv.v[j] = ip[in_off[j]];
          }
          if (weights_in_smem) {
            wv = *reinterpret_cast<const Pack<T, VEC>*>(wsm + (ky * p.x.kernel + kx) * span + threadIdx.x * VEC);
          } else {
            const int64_t wk = ky * p.w_s[2] + kx * p.w_s[3];
#pragma unroll
            for (int j = 0; j < VEC; ++j) wv.v[j] = __ldg(w + w_off[j] + wk);
          }
#pragma unroll
          for (int j = 0; j < VEC; ++j) acc[j] += static_cast<acc_t>(xv.v[j]) * static_cast<acc_t>(wv.v[j]);
        });
      });
      store_results<T, VEC, kVectorStore>(out_row + ox * p.out_s[3], acc, p.C - co0, p.out_s[1]);
    }
  }
}

int pow2_at_least(int64_t v, int cap) {
  int p = 1;
  while (p < v && p < cap) p *= 2;
  return p;
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
  p.rows = static_cast<int>(g.N * g.Hout);
  for (int i = 0; i < 4; ++i) {
    p.in_s[i] = input.stride(i);
    p.w_s[i] = weight.stride(i);
    p.out_s[i] = output.stride(i);
  }
  const int64_t vecs = along_channels ? (g.Cout + VEC - 1) / VEC : (g.Wout + VEC - 1) / VEC;
  // As many threads along the vectors as there are vectors (up to a warp), the rest of
  // the block along rows (rows kernel) or pixels (channels kernel).
  const int bx = pow2_at_least(vecs, 32);
  const int by = kThreads / bx;
  p.vecs = static_cast<int>(vecs);
  p.xblocks = static_cast<int>((vecs + bx - 1) / bx);
  const uintptr_t out_addr = reinterpret_cast<uintptr_t>(output.data_ptr());
  const int64_t* s = p.out_s;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const T* in = input.data_ptr<T>();
  const T* wt = weight.data_ptr<T>();
  T* out = output.data_ptr<T>();
  const dim3 block(bx, by);

  if (!along_channels) {
    // Each thread walks about 4 rows of its plane.
    const int64_t bands = std::min<int64_t>((g.Hout + 4 * by - 1) / (4 * by), 65535);
    const dim3 grid(static_cast<unsigned>(g.N * g.Cout * p.xblocks), static_cast<unsigned>(bands));
    const bool vstore = out_addr % 16 == 0 && s[0] % VEC == 0 && s[1] % VEC == 0 && s[2] % VEC == 0;
    // Compile-time x geometry where we have it, else the generic walk.
    auto fixed = [&](auto kw, auto sw, auto rb) {
      constexpr int KW = decltype(kw)::value, SW = decltype(sw)::value, RB = decltype(rb)::value;
      if (vstore)
        depthwise_rows_fixed_kernel<T, VEC, KW, SW, RB, true><<<grid, block, 0, stream>>>(in, wt, bias, out, p);
      else
        depthwise_rows_fixed_kernel<T, VEC, KW, SW, RB, false><<<grid, block, 0, stream>>>(in, wt, bias, out, p);
    };
    using I0 = std::integral_constant<int, 0>;
    using I1 = std::integral_constant<int, 1>;
    using I2 = std::integral_constant<int, 2>;
    using I3 = std::integral_constant<int, 3>;
    using I4 = std::integral_constant<int, 4>;
    const bool odd_pad = g.PW % 2 == 1;
    if (g.DW == 1 && g.SW == 2 && g.KW == 2) {
      odd_pad ? fixed(I2{}, I2{}, I1{}) : fixed(I2{}, I2{}, I0{});
    } else if (g.DW == 1 && g.SW == 2 && g.KW == 3) {
      odd_pad ? fixed(I3{}, I2{}, I1{}) : fixed(I3{}, I2{}, I0{});
    } else if (g.DW == 1 && g.SW == 2 && g.KW == 4) {
      odd_pad ? fixed(I4{}, I2{}, I1{}) : fixed(I4{}, I2{}, I0{});
    } else if (g.DW == 1 && g.SW == 1 && g.KW == 3) {
      fixed(I3{}, I1{}, I0{});
    } else if (vstore) {
      depthwise_rows_kernel<T, VEC, true><<<grid, block, 0, stream>>>(in, wt, bias, out, p);
    } else {
      depthwise_rows_kernel<T, VEC, false><<<grid, block, 0, stream>>>(in, wt, bias, out, p);
    }
  } else {
    const int64_t smem = g.KH * g.KW * bx * VEC * static_cast<int64_t>(sizeof(T));
    const bool weights_in_smem = smem <= kMaxWeightSmem;
    const dim3 grid(static_cast<unsigned>(p.xblocks), static_cast<unsigned>(std::min<int64_t>(p.rows, 65535)));
    const bool vstore = out_addr % 16 == 0 && s[0] % VEC == 0 && s[2] % VEC == 0 && s[3] % VEC == 0;
    const int64_t* is = p.in_s;
    const bool vload = g.Cout_g == 1 && g.Cout % VEC == 0 && is[1] == 1 && reinterpret_cast<uintptr_t>(input.data_ptr()) % 16 == 0 &&
                       is[0] % VEC == 0 && is[2] % VEC == 0 && is[3] % VEC == 0;
    const size_t shmem = weights_in_smem ? static_cast<size_t>(smem) : 0;
    if (vstore && vload)
      depthwise_channels_kernel<T, VEC, true, true><<<grid, block, shmem, stream>>>(in, wt, bias, out, p, weights_in_smem);
    else if (vstore)
      depthwise_channels_kernel<T, VEC, true, false><<<grid, block, shmem, stream>>>(in, wt, bias, out, p, weights_in_smem);
    else
      depthwise_channels_kernel<T, VEC, false, false><<<grid, block, shmem, stream>>>(in, wt, bias, out, p, weights_in_smem);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool depthwise_supported(const Geometry& g, const at::Tensor& output) {
  // 32-bit index math inside (tap_walk.cuh); memory offsets are 64-bit.
  const int64_t lim = int64_t(1) << 30;
  const bool extents_fit = g.H < lim && g.W < lim && g.Hout + g.PH < lim && g.Wout + g.PW < lim &&
                           g.KH * g.DH < lim && g.KW * g.DW < lim && g.Cout < lim &&
                           g.N * g.Hout < (int64_t(1) << 31) &&
                           g.N * g.Cout * (g.Wout + 1) < (int64_t(1) << 31);  // rows kernel's grid.x
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
