// The gather half of the GEMM + col2im forward (forward_gemm.cu): given
//   cols[(co*KH + ky)*KW + kx][pixel (n, iy, ix)]   (the GEMM W^T X),
// writes out[n, co, oy, ox] = bias[co] + sum of cols over the taps reaching (oy, ox), each
// output exactly once (deterministic, no atomics). For NCHW, two kernels, chosen by how many
// taps reach an output coordinate along an axis (MT = ceil(kernel / tap step)):
//
//   col2im_planes_kernel  MT == 1 (kernel == stride: U-Net, Mask R-CNN). A pure
//     permutation. A thread owns one output position q = oy*Wout + ox and R planes (n, co):
//     its single tap is found once and serves all its planes; a warp stores 32 consecutive
//     outputs of a plane whatever the width (rows of 28 would split sectors). Measured
//     against the rows kernel: Mask R-CNN fp32 gather 0.43 -> 0.35 ms, U-Net up1 0.51 -> 0.40.
//   col2im_rows_kernel    MT >= 2 (overlapping taps: DCGAN's k4 s2) and the general walk
//     (MT == 0 here, any tap count). A block covers output rows (n, co, oy) x TX columns;
//     a row's decode is done once per block in shared memory and a thread's horizontal
//     walk once for its rows. Measured against the planes kernel: DCGAN g4 gather 0.083 ->
//     0.073 ms (consecutive rows of a block read neighbouring cols rows).
//
//   col2im_cl_kernel      channels_last, from cols laid out [pixel][tap][co]: a warp along
//     the channels of one position (reads and writes both contiguous); col2im_cl_vec_kernel
//     the same with 16-byte vectors of channels where the channel count allows.
//
// All issue every load before the first add where the tap count is static (MT > 0): with
// data-dependent walks the compiler issued each load right before its add, one at a time,
// and the gather ran at ~40% of the copy bandwidth. One thread per output (the first
// version) spent ~150 instructions per element on five 32-bit divisions.
#pragma once

#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "env_knob.h"
#include "pack.cuh"
#include "tap_walk.cuh"

namespace convt {
namespace fwd {

struct GatherParams {
  AxisTaps y, x;
  int H, W, Hout, Wout, KH, KW, Cout;
  int64_t row_stride;   // cols elements between consecutive (co, ky, kx) rows
  int64_t img_stride;   // cols elements between consecutive images of the slice
  int64_t out_s[4];
};

namespace gather {

constexpr int kThreads = 256;

// Taps along one axis from walk start s: cols offset of each of the MT possible taps
// (-1: none). Same taps as for_each_tap, with a static count.
template <int MT>
__device__ __forceinline__ void axis_taps(const AxisTaps& a, TapStart s, int extent,
                                          int64_t tap_stride, int64_t in_stride,
                                          int64_t (&off)[MT]) {
#pragma unroll
  for (int j = 0; j < MT; ++j) {
    const int t = s.tap + j * a.step, i = s.in - j * a.in_step;
    off[j] = (t < a.kernel && i >= 0 && i < extent) ? t * tap_stride + i * in_stride : -1;
  }
}

// ---- one tap per axis: a thread = one position x R planes ---------------------------------
// Block: TQ positions (threadIdx.x) x 256/TQ plane lanes (threadIdx.y); lane l's planes are
// table entries l, l + TP, ... of the block's group of TP*R planes.
constexpr int kPlanesPerThread = 8;  // 8 loads in flight per thread

template <typename T>
__global__ void __launch_bounds__(kThreads)
    col2im_planes_kernel(const T* __restrict__ cols, const T* __restrict__ bias,
                         T* __restrict__ out, const GatherParams p, int64_t n0, int64_t planes) {
  using acc_t = at::opmath_type<T>;
  constexpr int R = kPlanesPerThread;
  constexpr int kMaxPlanes = kThreads / 32 * R;  // TQ >= 32
  __shared__ int64_t s_cols[kMaxPlanes];  // cols offset of the plane (image, channel)
  __shared__ int64_t s_out[kMaxPlanes];   // output offset of the plane
  __shared__ acc_t s_bias[kMaxPlanes];
  const int TP = blockDim.y, lane_p = threadIdx.y;
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool q_ok = q < static_cast<int64_t>(p.Hout) * p.Wout;
  // 32-bit: Hout * Wout < 2^31 (gemm_col2im_supported).
  const int oy = q_ok ? static_cast<int>(q) / p.Wout : 0;
  const int ox = q_ok ? static_cast<int>(q) - oy * p.Wout : 0;
  int64_t yoff[1], xoff[1];
  axis_taps<1>(p.y, first_tap(p.y, oy), p.H, p.KW * p.row_stride, p.W, yoff);
  axis_taps<1>(p.x, first_tap(p.x, ox), p.W, p.row_stride, 1, xoff);
  const int64_t off = (yoff[0] >= 0 && xoff[0] >= 0) ? yoff[0] + xoff[0] : -1;  // -1: bias only
  const int64_t out_q = oy * p.out_s[2] + ox * p.out_s[3];

  const int64_t per_group = static_cast<int64_t>(TP) * R;
  const int64_t groups = (planes + per_group - 1) / per_group;
  for (int64_t grp = blockIdx.y; grp < groups; grp += gridDim.y) {
    const int64_t plane0 = grp * per_group;
    __syncthreads();  // the previous group's table is no longer read
    if (tid < per_group && plane0 + tid < planes) {
      const int64_t plane = plane0 + tid;  // = nl * Cout + co
      const int co = static_cast<int>(plane % p.Cout);
      const int64_t nl = plane / p.Cout;
      s_cols[tid] = nl * p.img_stride + static_cast<int64_t>(co) * p.KH * p.KW * p.row_stride;
      s_out[tid] = (n0 + nl) * p.out_s[0] + co * p.out_s[1];
      s_bias[tid] = bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0);
    }
    __syncthreads();
    if (!q_ok) continue;
    const int64_t left = planes - plane0 - lane_p;  // planes from this lane's first one on
    const int64_t mine = left <= 0 ? 0 : (left + TP - 1) / TP;
    const int nr = static_cast<int>(mine < R ? mine : R);
    // Loads first, unconditionally (a missing tap or plane reads cols[0], then dropped).
    T v[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
      v[r] = cols[(r < nr && off >= 0) ? s_cols[lane_p + TP * r] + off : 0];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= nr) break;
      const int e = lane_p + TP * r;
      const acc_t acc = s_bias[e] + (off >= 0 ? static_cast<acc_t>(v[r]) : acc_t(0));
      out[s_out[e] + out_q] = static_cast<T>(acc);
    }
  }
}

template <typename T>
void launch_planes(const T* cols, const T* bias, T* out, const GatherParams& p, int64_t n0,
                   int64_t planes, cudaStream_t stream) {
  const int64_t hw_out = static_cast<int64_t>(p.Hout) * p.Wout;
  // Positions per block: the largest power of two from 256 down to 32 whose blocks are
  // mostly used (>= 85% of their threads over the plane), else 32.
  int tq = 32;
  for (int c = kThreads; c >= 32; c /= 2) {
    if (hw_out * 100 >= (hw_out + c - 1) / c * c * 85) {
      tq = c;
      break;
    }
  }
  const int tp = kThreads / tq;
  const int64_t groups = (planes + tp * kPlanesPerThread - 1) / (tp * kPlanesPerThread);
  const dim3 grid(static_cast<unsigned>((hw_out + tq - 1) / tq),
                  static_cast<unsigned>(std::min<int64_t>(groups, 65535)));
  col2im_planes_kernel<T><<<grid, dim3(tq, tp), 0, stream>>>(cols, bias, out, p, n0, planes);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---- overlapping taps: a thread = one column x 4 rows ------------------------------------
// Block: kRows rows (n, co, oy) x TX consecutive columns (TX = 8, 16, 32 after the width).
constexpr int kRowsPerThread = 4;

template <typename T, int TX, int MT>
__global__ void __launch_bounds__(kThreads)
    col2im_rows_kernel(const T* __restrict__ cols, const T* __restrict__ bias,
                       T* __restrict__ out, const GatherParams p, int64_t n0, int64_t rows) {
  using acc_t = at::opmath_type<T>;
  constexpr int TY = kThreads / TX;
  constexpr int kRows = TY * kRowsPerThread;
  __shared__ int64_t s_cols[kRows];  // cols offset of the row's (image, channel)
  __shared__ int64_t s_out[kRows];   // output offset of the row's first element
  __shared__ int s_ky[kRows], s_iy[kRows];
  __shared__ acc_t s_bias[kRows];
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  for (int i = threadIdx.x; i < kRows; i += kThreads) {
    const int64_t row = row0 + i;  // = (nl * Cout + co) * Hout + oy
    if (row >= rows) break;
    const int oy = static_cast<int>(row % p.Hout);
    const int64_t t = row / p.Hout;
    const int co = static_cast<int>(t % p.Cout);
    const int64_t nl = t / p.Cout;
    const TapStart ys = first_tap(p.y, oy);
    s_cols[i] = nl * p.img_stride + static_cast<int64_t>(co) * p.KH * p.KW * p.row_stride;
    s_out[i] = (n0 + nl) * p.out_s[0] + co * p.out_s[1] + oy * p.out_s[2];
    s_ky[i] = ys.tap;
    s_iy[i] = ys.in;
    s_bias[i] = bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0);
  }
  __syncthreads();
  const int ox = blockIdx.y * TX + threadIdx.x % TX;
  if (ox >= p.Wout) return;
  const TapStart xs = first_tap(p.x, ox);
  const int64_t out_x = ox * p.out_s[3];
  if constexpr (MT > 0) {
    int64_t xoff[MT];
    axis_taps<MT>(p.x, xs, p.W, p.row_stride, 1, xoff);
    T v[kRowsPerThread][MT][MT];
    bool ok[kRowsPerThread][MT][MT];
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int i = threadIdx.x / TX + r * TY;
      const bool row_ok = row0 + i < rows;
      int64_t yoff[MT];
      axis_taps<MT>(p.y, TapStart{s_ky[i], s_iy[i]}, p.H, p.KW * p.row_stride, p.W, yoff);
      const int64_t base = row_ok ? s_cols[i] : 0;
#pragma unroll
      for (int a = 0; a < MT; ++a)
#pragma unroll
        for (int b = 0; b < MT; ++b) {
          ok[r][a][b] = row_ok && yoff[a] >= 0 && xoff[b] >= 0;
          v[r][a][b] = cols[ok[r][a][b] ? base + yoff[a] + xoff[b] : 0];
        }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int i = threadIdx.x / TX + r * TY;
      acc_t acc = s_bias[i];
#pragma unroll
      for (int a = 0; a < MT; ++a)
#pragma unroll
        for (int b = 0; b < MT; ++b) acc += ok[r][a][b] ? static_cast<acc_t>(v[r][a][b]) : acc_t(0);
      if (row0 + i < rows) out[s_out[i] + out_x] = static_cast<T>(acc);
    }
  } else {
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int i = threadIdx.x / TX + r * TY;
      if (row0 + i >= rows) break;
      const T* c = cols + s_cols[i];
      acc_t acc = s_bias[i];
      for_each_tap(p.y, TapStart{s_ky[i], s_iy[i]}, p.H, [&](int ky, int iy) {
        for_each_tap(p.x, xs, p.W, [&](int kx, int ix) {
          acc += static_cast<acc_t>(
              c[(ky * p.KW + kx) * p.row_stride + static_cast<int64_t>(iy) * p.W + ix]);
        });
      });
      out[s_out[i] + out_x] = static_cast<T>(acc);
    }
  }
}

template <typename T, int MT>
void launch_rows(const T* cols, const T* bias, T* out, const GatherParams& p, int64_t n0,
                 int64_t rows, cudaStream_t stream) {
  auto launch = [&](auto tx_tag) {
    constexpr int TX = decltype(tx_tag)::value;
    constexpr int kRows = kThreads / TX * kRowsPerThread;
    const dim3 grid(static_cast<unsigned>((rows + kRows - 1) / kRows),
                    static_cast<unsigned>((p.Wout + TX - 1) / TX));
    col2im_rows_kernel<T, TX, MT><<<grid, kThreads, 0, stream>>>(cols, bias, out, p, n0, rows);
  };
  if (p.Wout <= 8) {
    launch(std::integral_constant<int, 8>{});
  } else if (p.Wout <= 16) {
    launch(std::integral_constant<int, 16>{});
  } else {
    launch(std::integral_constant<int, 32>{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---- channels_last: cols[pixel][tap][co], a warp along the channels ------------------------
// Block: 32 channel lanes (threadIdx.x) x 8 output positions (threadIdx.y); a thread walks
// its position's taps once and covers channels lane + 32r (r < 4) per pass, passes of 128
// channels. Reads of a tap and writes of a position are both 32 consecutive channels.
constexpr int kClPositions = 8;
constexpr int kClChannels = 4;  // channel groups of 32 per pass

// Output position `pos` of the slice (n, oy, ox, ox fastest) as its coordinates.
struct ClPosition {
  int ox, oy;
  int64_t nl;  // image within the slice
};
__device__ __forceinline__ ClPosition cl_position(const GatherParams& p, int64_t pos) {
  const int64_t t = pos / p.Wout;
  return {static_cast<int>(pos - t * p.Wout), static_cast<int>(t % p.Hout), t / p.Hout};
}

template <typename T, int MT>
__global__ void __launch_bounds__(kThreads)
    col2im_cl_kernel(const T* __restrict__ cols, const T* __restrict__ bias, T* __restrict__ out,
                     const GatherParams p, int64_t n0, int64_t positions) {
  using acc_t = at::opmath_type<T>;
  const int64_t pos = static_cast<int64_t>(blockIdx.x) * kClPositions + threadIdx.y;
  if (pos >= positions) return;
  const ClPosition q = cl_position(p, pos);
  const int ox = q.ox, oy = q.oy;
  const int64_t nl = q.nl;
  const TapStart ys = first_tap(p.y, oy), xs = first_tap(p.x, ox);
  const int64_t pix_row = static_cast<int64_t>(p.KH) * p.KW * p.Cout;  // cols per pixel
  const int64_t img = nl * p.H * p.W;
  T* o = out + (n0 + nl) * p.out_s[0] + oy * p.out_s[2] + ox * p.out_s[3];
  int64_t off[MT > 0 ? MT * MT : 1];
  if constexpr (MT > 0) {
    int64_t yoff[MT], xoff[MT];
    axis_taps<MT>(p.y, ys, p.H, static_cast<int64_t>(p.KW) * p.Cout, static_cast<int64_t>(p.W) * pix_row, yoff);
    axis_taps<MT>(p.x, xs, p.W, p.Cout, pix_row, xoff);
#pragma unroll
    for (int a = 0; a < MT; ++a)
#pragma unroll
      for (int b = 0; b < MT; ++b)
        off[a * MT + b] = (yoff[a] >= 0 && xoff[b] >= 0) ? img * pix_row + yoff[a] + xoff[b] : -1;
  }
  for (int co0 = 0; co0 < p.Cout; co0 += 32 * kClChannels) {
    if constexpr (MT > 0) {
      T v[kClChannels][MT * MT];
#pragma unroll
      for (int r = 0; r < kClChannels; ++r) {
        const int co = co0 + threadIdx.x + 32 * r;
#pragma unroll
        for (int k = 0; k < MT * MT; ++k)
          v[r][k] = cols[(co < p.Cout && off[k] >= 0) ? off[k] + co : 0];
      }
#pragma unroll
      for (int r = 0; r < kClChannels; ++r) {
        const int co = co0 + threadIdx.x + 32 * r;
        if (co >= p.Cout) break;
        acc_t acc = bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0);
#pragma unroll
        for (int k = 0; k < MT * MT; ++k) acc += off[k] >= 0 ? static_cast<acc_t>(v[r][k]) : acc_t(0);
        o[co * p.out_s[1]] = static_cast<T>(acc);
      }
    } else {
      for (int r = 0; r < kClChannels; ++r) {
        const int co = co0 + threadIdx.x + 32 * r;
        if (co >= p.Cout) break;
        acc_t acc = bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0);
        for_each_tap(p.y, ys, p.H, [&](int ky, int iy) {
          for_each_tap(p.x, xs, p.W, [&](int kx, int ix) {
            acc += static_cast<acc_t>(cols[(img + static_cast<int64_t>(iy) * p.W + ix) * pix_row +
                                           (ky * p.KW + kx) * p.Cout + co]);
          });
        });
        o[co * p.out_s[1]] = static_cast<T>(acc);
      }
    }
  }
}

template <typename T, int MT>
void launch_cl(const T* cols, const T* bias, T* out, const GatherParams& p, int64_t n0,
               int64_t positions, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((positions + kClPositions - 1) / kClPositions));
  col2im_cl_kernel<T, MT><<<grid, dim3(32, kClPositions), 0, stream>>>(cols, bias, out, p, n0, positions);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The same gather with V = 16 / sizeof(T) channels per thread: 16-byte loads and stores, where the
// channel count is a multiple of V and the pointers and output strides keep every vector aligned
// (vec_cl_applies). A thread owns one (position, group of V channels); consecutive threads take a
// position's consecutive groups, then the next position's, so a warp reads 512 contiguous bytes
// of each tap's cols and writes whole sectors of output whatever the channel count. Why: the
// element kernel above moves 2 (16-bit) or 4 bytes per lane and load; on dcgan_g2 bf16 (256
// channels, k4 s2: 17 MB of cols, just written by the GEMM, L2-resident) it took 11.9 us against
// the GEMM's 15.9, about 1.8 TB/s. Measured (H100 run TJ, kernel us, element -> vectors): dcgan_g2
// bf16 12.0 -> 6.8, float32 15.4 -> 11.9; unet_up4 float32 (one tap per axis) 63.2 -> 56.4. Static
// tap counts only (MT 1 or 2): the general walk keeps the element kernel.
template <typename T, int MT>
__global__ void __launch_bounds__(kThreads)
    col2im_cl_vec_kernel(const T* __restrict__ cols, const T* __restrict__ bias, T* __restrict__ out,
                         const GatherParams p, int64_t n0, int64_t positions) {
  static_assert(MT > 0, "a static tap count");
  constexpr int V = 16 / sizeof(T);
  using acc_t = at::opmath_type<T>;
  using Vec = Pack<T, V>;
  const int groups = p.Cout / V;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (idx >= positions * groups) return;
  const int64_t pos = idx / groups;
  const int co = static_cast<int>(idx - pos * groups) * V;
  const ClPosition q = cl_position(p, pos);
  const int ox = q.ox, oy = q.oy;
  const int64_t nl = q.nl;
  const TapStart ys = first_tap(p.y, oy), xs = first_tap(p.x, ox);
  const int64_t pix_row = static_cast<int64_t>(p.KH) * p.KW * p.Cout;  // cols per pixel
  int64_t yoff[MT], xoff[MT];
  axis_taps<MT>(p.y, ys, p.H, static_cast<int64_t>(p.KW) * p.Cout, static_cast<int64_t>(p.W) * pix_row, yoff);
  axis_taps<MT>(p.x, xs, p.W, p.Cout, pix_row, xoff);
  const int64_t base = nl * p.H * p.W * pix_row + co;
  // Every tap's load issued before the first add (a tap that does not reach this output reads
  // the first vector instead and is masked in the sum).
  Vec v[MT * MT];
  bool on[MT * MT];
#pragma unroll
  for (int a = 0; a < MT; ++a)
#pragma unroll
    for (int b = 0; b < MT; ++b) {
      on[a * MT + b] = yoff[a] >= 0 && xoff[b] >= 0;
      v[a * MT + b] = *reinterpret_cast<const Vec*>(cols + (on[a * MT + b] ? base + yoff[a] + xoff[b] : 0));
    }
  Vec r;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    acc_t acc = bias != nullptr ? static_cast<acc_t>(bias[co + e]) : acc_t(0);
#pragma unroll
    for (int k = 0; k < MT * MT; ++k) acc += on[k] ? static_cast<acc_t>(v[k].v[e]) : acc_t(0);
    r.v[e] = static_cast<T>(acc);
  }
  T* o = out + (n0 + nl) * p.out_s[0] + oy * p.out_s[2] + ox * p.out_s[3] + co;
  *reinterpret_cast<Vec*>(o) = r;
}

// Measurement knob CONVT_FWD_GATHER_VEC=0: the channels_last gather always takes the element
// kernel. Read once.
inline bool vec_cl_allowed() {
  static const bool on = !env_equals("CONVT_FWD_GATHER_VEC", "0");
  return on;
}

// Whether col2im_cl_vec_kernel's vectors stay aligned: channels a multiple of V, dense along
// channels, every other output stride a multiple of V, both base pointers 16-byte aligned (the
// cols offsets are multiples of Cout).
template <typename T>
bool vec_cl_applies(const T* cols, const T* out, const GatherParams& p) {
  constexpr int V = 16 / sizeof(T);
  return p.Cout % V == 0 && p.out_s[1] == 1 && p.out_s[0] % V == 0 && p.out_s[2] % V == 0 && p.out_s[3] % V == 0 &&
         reinterpret_cast<uintptr_t>(cols) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
}

template <typename T, int MT>
void launch_cl_vec(const T* cols, const T* bias, T* out, const GatherParams& p, int64_t n0,
                   int64_t positions, cudaStream_t stream) {
  const int64_t threads = positions * (p.Cout / (16 / static_cast<int>(sizeof(T))));
  const dim3 grid(static_cast<unsigned>((threads + kThreads - 1) / kThreads));
  col2im_cl_vec_kernel<T, MT><<<grid, kThreads, 0, stream>>>(cols, bias, out, p, n0, positions);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Most taps that reach one output coordinate along an axis: ceil(kernel / tap step).
inline int max_taps(const AxisTaps& a) { return (a.kernel + a.step - 1) / a.step; }

}  // namespace gather

// Host: the gather of the slice's images [n0, n0 + images), cols[(co, ky, kx)][pixel].
template <typename T>
void launch_col2im_gather(const T* cols, const T* bias, T* out, const GatherParams& p, int64_t n0,
                          int64_t images, cudaStream_t stream) {
  const int mt = std::max(gather::max_taps(p.y), gather::max_taps(p.x));
  const int64_t planes = images * p.Cout;
  if (mt <= 1) {
    gather::launch_planes<T>(cols, bias, out, p, n0, planes, stream);
  } else if (mt == 2) {
    gather::launch_rows<T, 2>(cols, bias, out, p, n0, planes * p.Hout, stream);
  } else {
    gather::launch_rows<T, 0>(cols, bias, out, p, n0, planes * p.Hout, stream);
  }
}

// Host: the same for channels_last, cols[pixel][(ky, kx)][co] (forward_gemm.cu kPixelMajor);
// the output's channel stride is 1.
template <typename T>
void launch_col2im_gather_cl(const T* cols, const T* bias, T* out, const GatherParams& p, int64_t n0,
                             int64_t images, cudaStream_t stream) {
  const int mt = std::max(gather::max_taps(p.y), gather::max_taps(p.x));
  const int64_t positions = images * p.Hout * p.Wout;
  if (mt <= 2 && gather::vec_cl_applies(cols, out, p) && gather::vec_cl_allowed()) {
    if (mt <= 1) {
      gather::launch_cl_vec<T, 1>(cols, bias, out, p, n0, positions, stream);
    } else {
      gather::launch_cl_vec<T, 2>(cols, bias, out, p, n0, positions, stream);
    }
  } else if (mt <= 1) {
    gather::launch_cl<T, 1>(cols, bias, out, p, n0, positions, stream);
  } else if (mt == 2) {
    gather::launch_cl<T, 2>(cols, bias, out, p, n0, positions, stream);
  } else {
    gather::launch_cl<T, 0>(cols, bias, out, p, n0, positions, stream);
  }
}

}  // namespace fwd
}  // namespace convt
