// grad_bias[co] = sum over n, oh, ow of grad_output[n, co, oh, ow].
//
// Two deterministic passes: blocks (channel tile, split) sum a fixed range of the channels'
// N*Hout*Wout values (each thread a fixed subsequence, then a fixed-order block tree) into
// ws[split][co]; a second kernel sums the splits in order (a thread per channel, the
// channels' partials of one split adjacent: coalesced). Pure bandwidth: one read of
// grad_output, in 16-byte vectors with several in flight per thread:
//  - NCHW: a channel's values are N contiguous planes; where every plane is whole aligned
//    vectors they are read as one sequence of vectors (small planes too), else each plane as
//    an aligned vector body plus at most VEC - 1 scalar elements at each end.
//  - channels_last, read in place: a thread sums VEC consecutive channels of a pixel
//    (C a multiple of VEC, 16-byte aligned), else a lane per channel.
// The element-per-thread kernels before read 0.7-0.8 TB/s (bf16 kb2_2: 1.46 ms of a 5.9 ms
// channels_last training step; docs/perf-notes-backward.md, v17).
// This pass runs only where no other pass sums grad_bias from its own loads: the depthwise
// kernels, the channels_last copy of grad_output (layout.cu; at stride > 1 for grad_input's
// residues, at stride 1 where grad_input's forward needs it), the paired space-to-depth copy
// (backward_s2d_gemm.cu), the channels_last columns copy at kernel == stride (the same file), the
// 16-bit warp-specialized grad_weight kernel (backward_grad_weight_ws.cu), the float32 rows kernel
// (backward_grad_weight_rows.cu) and the TF32 ring kernel (backward_grad_weight_wgmma.cu) do, and
// hand their partials to grad_bias_reduce below.
#include "backward_common.cuh"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <cstdint>

#include "pack.cuh"

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = 256;

constexpr int kUnroll = 4;  // vectors in flight per thread
constexpr int64_t kSegVecs = int64_t(kThreads) * kUnroll;

// Adds kUnroll vectors to `acc` in order, all loads issued before the first add.
// `load(j, v)` fills vector j and returns true, or returns false where j is past the end
// (counted as zeros).
template <typename T, typename Acc, int VEC, typename Load>
__device__ __forceinline__ void add_vectors(Acc& acc, Load load) {
  Pack<T, VEC> pk[kUnroll];
#pragma unroll
  for (int j = 0; j < kUnroll; ++j) {
    if (!load(j, pk[j])) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) pk[j].v[e] = T(0);
    }
  }
#pragma unroll
  for (int j = 0; j < kUnroll; ++j)
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc += static_cast<Acc>(pk[j].v[e]);
}

// go NCHW-contiguous. A segment is kSegVecs vectors of one plane's aligned body; block (co,
// split) sums segments [split * segs_per_split, ...), thread t reading vectors t,
// t + kThreads, ... of each. Segment 0 of a plane also adds the plane's unaligned head
// (threads 0 .. VEC-1) and tail (threads VEC .. 2 VEC-1).
template <typename T, typename Acc, int VEC>
__global__ __launch_bounds__(kThreads) void grad_bias_partial_kernel(const T* __restrict__ go,
                                                                     Acc* __restrict__ ws, int64_t C,
                                                                     int64_t HWo, int64_t segs_per_plane,
                                                                     int64_t total_segs,
                                                                     int64_t segs_per_split) {
  using V = Pack<T, VEC>;
  __shared__ Acc s_red[kThreads / 32];
  const int64_t co = blockIdx.x;
  const int64_t split = blockIdx.y;
  const int64_t s_begin = split * segs_per_split;
  const int64_t s_end = std::min(total_segs, s_begin + segs_per_split);
  const int t = threadIdx.x;
  Acc acc = Acc(0);
  for (int64_t s = s_begin; s < s_end; ++s) {
    const int64_t n = s / segs_per_plane, part = s - n * segs_per_plane;
    const T* plane = go + (n * C + co) * HWo;
    // Elements before the first 16-byte boundary, then whole vectors, then the rest.
    const int64_t head = std::min<int64_t>(
        HWo, ((16 - reinterpret_cast<std::uintptr_t>(plane) % 16) % 16) / sizeof(T));
    const int64_t body = (HWo - head) / VEC;
    const V* vp = reinterpret_cast<const V*>(plane + head);
    const int64_t v0 = part * kSegVecs + t;
    add_vectors<T, Acc, VEC>(acc, [&](int j, V& out) {
      const int64_t v = v0 + j * kThreads;
      if (v >= body) return false;
      out = vp[v];
      return true;
    });
    if (part == 0) {
      const int64_t tail0 = head + body * VEC;
      if (t < head) acc += static_cast<Acc>(plane[t]);
      if (t >= VEC && t < VEC + (HWo - tail0)) acc += static_cast<Acc>(plane[tail0 + t - VEC]);
    }
  }
  const Acc total_sum = block_sum_fixed_order<kThreads>(acc, s_red);
  if (threadIdx.x == 0) ws[split * C + co] = total_sum;
}

// go NCHW-contiguous with every plane whole aligned vectors (HWo a multiple of VEC, base
// 16-byte aligned, N * HWo / VEC < 2^31): the channel's N * vpp vectors as one sequence, so
// that planes smaller than a segment (Mask R-CNN's 28 x 28: 98 vectors) keep every thread
// busy. Block (co, split) sums segments of kSegVecs vectors [split * segs_per_split, ...).
template <typename T, typename Acc, int VEC>
__global__ __launch_bounds__(kThreads) void grad_bias_partial_flat_kernel(const T* __restrict__ go,
                                                                          Acc* __restrict__ ws, int64_t C,
                                                                          uint32_t vpp, uint32_t total_vecs,
                                                                          int64_t segs_per_split) {
  using V = Pack<T, VEC>;
  __shared__ Acc s_red[kThreads / 32];
  const int64_t co = blockIdx.x;
  const int64_t split = blockIdx.y;
  const V* base = reinterpret_cast<const V*>(go);
  const int64_t q_begin = split * segs_per_split * kSegVecs;
  const int64_t q_end = std::min<int64_t>(total_vecs, q_begin + segs_per_split * kSegVecs);
  Acc acc = Acc(0);
  for (int64_t q0 = q_begin + threadIdx.x; q0 < q_end; q0 += kSegVecs) {
    add_vectors<T, Acc, VEC>(acc, [&](int j, V& out) {
      const uint32_t q = static_cast<uint32_t>(q0 + j * kThreads);
      if (q >= q_end) return false;
      const uint32_t n = q / vpp, v = q - n * vpp;
      out = base[(static_cast<int64_t>(n) * C + co) * vpp + v];
      return true;
    });
  }
  const Acc total_sum = block_sum_fixed_order<kThreads>(acc, s_red);
  if (threadIdx.x == 0) ws[split * C + co] = total_sum;
}

// go channels_last-contiguous ([P][C], P = N*Hout*Wout), C a multiple of VEC, 16-byte
// aligned. Block (tile of tpp * VEC channels, split): thread (lane_c = t % tpp, row = t / tpp)
// sums pixels begin + row, + rows, ... of channels (tile * tpp + lane_c) * VEC .. + VEC-1
// (tpp threads cover a pixel's tile with consecutive 16-byte loads), then the rows' partials
// are added in row order.
template <typename T, typename Acc, int VEC>
__global__ __launch_bounds__(kThreads) void grad_bias_partial_cl_vec_kernel(const T* __restrict__ go,
                                                                            Acc* __restrict__ ws,
                                                                            int64_t P, int64_t C, int tpp,
                                                                            int64_t chunk) {
  using V = Pack<T, VEC>;
  __shared__ Acc s_part[kThreads][VEC + 1];
  const int t = threadIdx.x;
  const int lane_c = t % tpp, row = t / tpp, rows = kThreads / tpp;
  const int64_t c = (static_cast<int64_t>(blockIdx.x) * tpp + lane_c) * VEC;
  const int64_t split = blockIdx.y;
  const int64_t q_begin = split * chunk, q_end = std::min(P, q_begin + chunk);
  Acc acc[VEC] = {};
  if (c < C) {
    for (int64_t q = q_begin + row; q < q_end; q += int64_t(rows) * kUnroll) {
      V pk[kUnroll];
#pragma unroll
      for (int j = 0; j < kUnroll; ++j) {
        const int64_t qq = q + int64_t(j) * rows;
        if (qq < q_end) {
          pk[j] = *reinterpret_cast<const V*>(go + qq * C + c);
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e) pk[j].v[e] = T(0);
        }
      }
#pragma unroll
      for (int j = 0; j < kUnroll; ++j)
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[e] += static_cast<Acc>(pk[j].v[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e) s_part[t][e] = acc[e];
  __syncthreads();
  // Thread t < tpp * VEC finishes channel tile * tpp * VEC + t.
  if (t < tpp * VEC) {
    const int lc = t / VEC, e = t % VEC;
    const int64_t ch = (static_cast<int64_t>(blockIdx.x) * tpp + lc) * VEC + e;
    if (ch < C) {
      Acc sum = Acc(0);
      for (int r = 0; r < rows; ++r) sum += s_part[r * tpp + lc][e];
      ws[split * C + ch] = sum;
    }
  }
}

// go is channels_last-contiguous: [P][C] with P = N*Hout*Wout. Block (32-channel tile,
// split): thread (cx, ry) sums pixels begin + ry, + kRowsCL, ... of channel tile*32 + cx (a
// warp reads 32 consecutive channels of one pixel), then the kRowsCL partials are added in
// a fixed order.
constexpr int kRowsCL = kThreads / 32;
template <typename T, typename Acc>
__global__ __launch_bounds__(kThreads) void grad_bias_partial_cl_kernel(const T* __restrict__ go,
                                                                        Acc* __restrict__ ws,
                                                                        int64_t P, int64_t C,
                                                                        int64_t chunk) {
  __shared__ Acc s_part[kRowsCL][33];
  const int cx = threadIdx.x % 32, ry = threadIdx.x / 32;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + cx;
  const int64_t split = blockIdx.y;
  const int64_t q_begin = split * chunk, q_end = std::min(P, q_begin + chunk);
  Acc acc = Acc(0);
  if (c < C) {
    // kUnroll pixels' loads in flight per thread (added in pixel order, as one at a time).
    for (int64_t q = q_begin + ry; q < q_end; q += kRowsCL * kUnroll) {
      T v[kUnroll];
#pragma unroll
      for (int j = 0; j < kUnroll; ++j) {
        const int64_t qq = q + j * kRowsCL;
        v[j] = qq < q_end ? go[qq * C + c] : T(0);
      }
#pragma unroll
      for (int j = 0; j < kUnroll; ++j) acc += static_cast<Acc>(v[j]);
    }
  }
  s_part[ry][cx] = acc;
  __syncthreads();
  if (ry == 0 && c < C) {
    Acc sum = Acc(0);
#pragma unroll
    for (int r = 0; r < kRowsCL; ++r) sum += s_part[r][cx];
    ws[split * C + c] = sum;
  }
}

// Block of 32 channels x kFinalRows: thread (c, j) sums splits j, j + kFinalRows, ... of
// channel c (a warp reads 32 adjacent partials of one split), then row 0 adds the kFinalRows
// partials in order. (A thread per channel over every split took 0.05 ms on Mask R-CNN's
// 1056 splits, run FF.)
constexpr int kFinalRows = kThreads / 32;
template <typename T, typename Acc>
__global__ __launch_bounds__(kThreads) void grad_bias_final_kernel(const Acc* __restrict__ ws,
                                                                   T* __restrict__ gb, int64_t C,
                                                                   int64_t splits,
                                                                   int64_t stride) {
  __shared__ Acc s_part[kFinalRows][33];
  const int cx = threadIdx.x % 32, j = threadIdx.x / 32;
  const int64_t co = static_cast<int64_t>(blockIdx.x) * 32 + cx;
  Acc sum = Acc(0);
  if (co < C)
    for (int64_t s = j; s < splits; s += kFinalRows) sum += ws[s * C + co];
  s_part[j][cx] = sum;
  __syncthreads();
  if (j == 0 && co < C) {
    Acc total = Acc(0);
#pragma unroll
    for (int r = 0; r < kFinalRows; ++r) total += s_part[r][cx];
    gb[co * stride] = static_cast<T>(total);
  }
}

}  // namespace

void grad_bias_sum(const at::Tensor& go, const Geometry& g, const at::Tensor& grad_bias) {
  CONVT_TRACE("cuda.backward.grad_bias");
  const int64_t HWo = g.Hout * g.Wout;
  const int64_t total = g.N * HWo;
  TORCH_CHECK(g.Cout < (int64_t(1) << 31), "convt: too many output channels");
  // channels_last grad_output is read in place (no transposed copy just for the bias).
  const bool cl = channels_last_only(go);
  TORCH_CHECK(cl || go.is_contiguous(), "convt: grad_bias_sum: grad_output must be NCHW or channels_last");
  const int64_t want_blocks = int64_t(sm_count()) * 8;
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_grad_bias", [&] {
    using Acc = acc_t<scalar_t>;
    constexpr int kVec = 16 / sizeof(scalar_t);
    const scalar_t* gop = go.const_data_ptr<scalar_t>();
    // Blocks: channel tiles times splits of each channel's values (about eight blocks per
    // multiprocessor); `units` are what a split is made of (segments or pixels).
    int64_t tiles, units, min_per_split;
    int tpp = 0;  // channels_last vector kernel: threads per pixel
    bool cl_vec = false, flat = false;
    const bool aligned = reinterpret_cast<std::uintptr_t>(gop) % 16 == 0;
    if (cl) {
      cl_vec = g.Cout % kVec == 0 && aligned;
      if (cl_vec) {
        tpp = 1;
        while (tpp < 32 && tpp * kVec < g.Cout) tpp *= 2;
      }
      tiles = ceil_div(g.Cout, cl_vec ? int64_t(tpp) * kVec : int64_t(32));
      units = total;  // pixels
      // At least one step of the block's pixel rows per split (unet_up4's 512 channels:
      // 8 rows per step; a floor of 2048 pixels before left it 32 blocks).
      min_per_split = int64_t(cl_vec ? kThreads / tpp : kThreads / 32) * kUnroll;
    } else {
      tiles = g.Cout;
      flat = HWo % kVec == 0 && aligned && total / kVec < (int64_t(1) << 31);
      units = flat ? ceil_div(total / kVec, kSegVecs) : g.N * std::max<int64_t>(1, ceil_div(HWo / kVec, kSegVecs));
      min_per_split = 1;  // segments
    }
    TORCH_CHECK(tiles < (int64_t(1) << 31), "convt: too many output channels");
    const int64_t splits0 = std::max<int64_t>(
        1, std::min<int64_t>({ceil_div(want_blocks, tiles), ceil_div(units, min_per_split), 65535}));
    const int64_t per_split = ceil_div(units, splits0);
    const int64_t splits = ceil_div(units, per_split);
    at::Tensor ws = at::empty({g.Cout * splits}, go.options().dtype(c10::CppTypeToScalarType<Acc>::value));
    Acc* wsp = ws.mutable_data_ptr<Acc>();
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splits));
    if (cl_vec) {
      grad_bias_partial_cl_vec_kernel<scalar_t, Acc, kVec><<<grid, kThreads, 0, stream>>>(gop, wsp, total, g.Cout, tpp, per_split);
    } else if (cl) {
      grad_bias_partial_cl_kernel<scalar_t, Acc><<<grid, kThreads, 0, stream>>>(gop, wsp, total, g.Cout, per_split);
    } else if (flat) {
      grad_bias_partial_flat_kernel<scalar_t, Acc, kVec><<<grid, kThreads, 0, stream>>>(
          gop, wsp, g.Cout, static_cast<uint32_t>(HWo / kVec), static_cast<uint32_t>(total / kVec), per_split);
    } else {
      const int64_t segs_per_plane = units / g.N;
      grad_bias_partial_kernel<scalar_t, Acc, kVec>
          <<<grid, kThreads, 0, stream>>>(gop, wsp, g.Cout, HWo, segs_per_plane, units, per_split);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    grad_bias_reduce(ws, g, splits, grad_bias);
  });
}

void grad_bias_reduce(const at::Tensor& ws, const Geometry& g, int64_t splits, const at::Tensor& grad_bias) {
  TORCH_CHECK(ws.is_contiguous() && ws.numel() == splits * g.Cout, "convt: grad_bias_reduce: workspace shape");
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_bias.scalar_type(), "convt_grad_bias_reduce", [&] {
    using Acc = acc_t<scalar_t>;
    grad_bias_final_kernel<scalar_t, Acc><<<static_cast<unsigned>(ceil_div(g.Cout, int64_t(32))), kThreads, 0, stream>>>(
        ws.const_data_ptr<Acc>(), grad_bias.mutable_data_ptr<scalar_t>(), g.Cout, splits, grad_bias.stride(0));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace bwd
}  // namespace convt
