// Store-bound forward: CUDA-core multiply-adds for shapes with few of them per output element.
//
// Where a phase's GEMM has a small K (few input channels per group times few taps) and most of
// the output is written by no tap at all (kb1_81: stride 5 with a 3 x 3 kernel at dilation 2,
// 16 of every 25 pixels zero; kb1_75: groups 4, 8 channels a group, every second row zero), the
// time is the output's write: 11.6 and 20 multiply-adds per output element against 831 and
// 806 MB written in float32. The tensor-core kernels (forward_wgmma.cu's column-phase blocks,
// forward_igemm.cu) run there at 3.0-3.3x that floor: one 12-warp block an SM (136 registers a
// thread, so the register file holds one), loads, MMAs and stores in sequence, and per-phase
// stores that land every SW-th element (perf-notes-forward, fifteenth and fifty-first sessions).
//
// This kernel writes the output the way a fill would: consecutive lanes own consecutive output
// columns of one row, so every store instruction writes 32 consecutive elements of a channel's
// row (whole sectors, NCHW), and a tapless pixel costs its stores only. At ~70 registers a thread
// several 256-thread blocks share a multiprocessor, so one block's multiply-adds overlap the
// others' stores.
//
// Work: a block owns a (batch image, group, block of CPT output channels) plane group and a
// range of its items. An item is one output column ox of ROWS output rows oy0 + SH * k
// (k < ROWS) that have the same row residue (oy + PH) mod SH, hence the same row taps, the k-th
// reading input row iy + k. So a thread loads each weight once for ROWS x CPT multiply-adds.
// Items are numbered (band, residue, ox), ox fastest: a band is SH * ROWS consecutive rows.
//
// Weights: the plane group's [tap][ci][CPT] in shared memory as float (converted once), the tap
// pitch padded by 4 floats so that lanes on different column taps read different banks. The
// input is read through the read-only cache (each element serves ~SW * taps lanes of one warp).
// Accumulation in fp32, in a fixed order (row taps, column taps, channels): fp32-accurate whatever
// the TF32 flag says, and bit-identical run to run.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <type_traits>

#include "env_knob.h"
#include "forward_launch.cuh"
#include "tap_walk.cuh"
#include "../host_trace.h"

namespace convt {
namespace fwd {
namespace {

constexpr int kThreads = 256;
constexpr int kRows = 2;              // output rows per item (same residue, SH apart)
constexpr int kTapPad = 4;            // floats of padding per tap in shared memory
constexpr int kBatch = 4;             // input channels whose loads are in flight together
constexpr int kSmemLimit = 48 * 1024;  // dynamic shared memory without an opt-in
// Above this many multiply-adds per output element the tensor-core kernels win: H100's fp32 FMA
// peak (~33 T/s, ~40% of it reachable here) against ~0.75 T float outputs/s written balance at
// ~18-45. The suite has nothing between 20 (kb1_75) and 128 (unet_up1). An estimate, to be
// measured (docs/perf-notes-forward.md, fifty-third session).
constexpr double kMaxFmaPerOutput = 32.0;
// The rule takes only outputs this large (elements): the regime the kernel is for, where the write
// is the time. Smaller outputs keep the kernels measured on them (and their tests).
constexpr int64_t kMinOutputElements = int64_t(1) << 22;

// 32-bit geometry (checked on the host), as forward_direct.cu: the index math runs per item.
struct StoreBoundParams {
  AxisTaps y, x;
  int H, W, Hout, Wout, SH;
  int Cin_g, Cout_g, groups, co_blocks;
  int planes;           // N * groups * co_blocks: the plane groups
  int items;            // items per plane group: bands * SH * Wout
  int items_per_block;  // a multiple of kThreads
  int tap_pitch;        // floats per tap in shared memory: Cin_g * CPT + kTapPad
  int64_t in_s[4];      // input strides (N, C, H, W)
  int64_t w_s[4];       // weight strides (Cin, Cout_g, KH, KW)
  int64_t out_s[4];     // output strides (N, C, H, W)
};

// acc[k][j] += x[c][row k] * w[c][j] for B consecutive channels c: x from ip (channel stride cs,
// row stride rs; rows that are not valid read as zeros), w from shared memory [c][CPT]. The B x kRows
// loads are issued before the multiply-adds.
template <int B, int CPT, typename T>
__device__ __forceinline__ void accumulate_channels(float (&acc)[kRows][CPT], const T* ip, const float* wt,
                                                    const bool (&valid)[kRows], int64_t cs, int64_t rs) {
  float xv[B][kRows];
#pragma unroll
  for (int c = 0; c < B; ++c)
#pragma unroll
    for (int k = 0; k < kRows; ++k) xv[c][k] = valid[k] ? static_cast<float>(__ldg(ip + c * cs + k * rs)) : 0.f;
#pragma unroll
  for (int c = 0; c < B; ++c) {
#pragma unroll
    for (int q = 0; q < CPT / 4; ++q) {
      const float4 wv = *reinterpret_cast<const float4*>(wt + c * CPT + 4 * q);
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        acc[k][4 * q + 0] = fmaf(xv[c][k], wv.x, acc[k][4 * q + 0]);
        acc[k][4 * q + 1] = fmaf(xv[c][k], wv.y, acc[k][4 * q + 1]);
        acc[k][4 * q + 2] = fmaf(xv[c][k], wv.z, acc[k][4 * q + 2]);
        acc[k][4 * q + 3] = fmaf(xv[c][k], wv.w, acc[k][4 * q + 3]);
      }
    }
  }
}

template <typename T, int CPT>
__global__ void __launch_bounds__(kThreads, 2) store_bound_kernel(const T* __restrict__ in, const T* __restrict__ w,
                                                               const T* __restrict__ bias, T* __restrict__ out,
                                                               const StoreBoundParams p) {
  static_assert(CPT % 4 == 0, "weights are read as float4");
  extern __shared__ float4 smem_f4[];
  float* ws = reinterpret_cast<float*>(smem_f4);
  const int KH = p.y.kernel, KW = p.x.kernel, ntaps = KH * KW;

  // grid y: the plane group, looped where there are more than the grid allows.
  for (int z = blockIdx.y; z < p.planes; z += gridDim.y) {
    const int ng = z / p.co_blocks;
    const int cob = z - ng * p.co_blocks;
    const int n = ng / p.groups;
    const int grp = ng - n * p.groups;
    const int co_l0 = cob * CPT;  // first output channel within the group

    // Stage the weights: thread i reads element i of the block's run [ci][co block][ky][kx]
    // (contiguous for a contiguous weight), stores it at [tap][ci][j]; zeros past Cout_g.
    __syncthreads();  // (the previous plane group's reads are done)
    const int wcount = p.Cin_g * CPT * ntaps;
    const T* w_g = w + static_cast<int64_t>(grp) * p.Cin_g * p.w_s[0];
    for (int i = threadIdx.x; i < wcount; i += kThreads) {
      const int tap = i % ntaps;
      const int rest = i / ntaps;
      const int j = rest % CPT;
      const int ci = rest / CPT;
      const int ky = tap / KW, kx = tap - ky * KW;
      float v = 0.f;
      if (co_l0 + j < p.Cout_g)
        v = static_cast<float>(w_g[ci * p.w_s[0] + (co_l0 + j) * p.w_s[1] + ky * p.w_s[2] + kx * p.w_s[3]]);
      ws[tap * p.tap_pitch + ci * CPT + j] = v;
    }
    float bv[CPT];
#pragma unroll
    for (int j = 0; j < CPT; ++j) {
      const int co_l = co_l0 + j;
      bv[j] = (bias != nullptr && co_l < p.Cout_g) ? static_cast<float>(bias[grp * p.Cout_g + co_l]) : 0.f;
    }
    __syncthreads();

    const T* in_g = in + n * p.in_s[0] + static_cast<int64_t>(grp) * p.Cin_g * p.in_s[1];
    T* out_g = out + n * p.out_s[0] + (static_cast<int64_t>(grp) * p.Cout_g + co_l0) * p.out_s[1];
    const int i0 = blockIdx.x * p.items_per_block;
    const int i1 = min(i0 + p.items_per_block, p.items);
    for (int item = i0 + static_cast<int>(threadIdx.x); item < i1; item += kThreads) {
      const int ox = item % p.Wout;
      const int rest = item / p.Wout;
      const int band = rest / p.SH;
      const int oy0 = band * p.SH * kRows + (rest - band * p.SH);
      if (oy0 >= p.Hout) continue;

      float acc[kRows][CPT];
#pragma unroll
      for (int k = 0; k < kRows; ++k)
#pragma unroll
        for (int j = 0; j < CPT; ++j) acc[k][j] = 0.f;

      // Row taps of oy0 (the same for every row of the item, row k reading iy + k). Input rows
      // fall as taps rise: skip taps whose rows are all past the end, stop once all are before
      // the start.
      const TapStart ys = first_tap(p.y, oy0), xs = first_tap(p.x, ox);
      int iy = ys.in;
      for (int ky = ys.tap; ky < KH; ky += p.y.step, iy -= p.y.in_step) {
        if (iy >= p.H) continue;
        if (iy + kRows - 1 < 0) break;
        bool valid[kRows];
#pragma unroll
        for (int k = 0; k < kRows; ++k) valid[k] = iy + k >= 0 && iy + k < p.H;
        // Column taps of ox (tap_walk.cuh's for_each_tap, written out).
        int ix = xs.in;
        for (int kx = xs.tap; kx < KW; kx += p.x.step, ix -= p.x.in_step) {
          if (ix >= p.W) continue;
          if (ix < 0) break;
          const float* wt = ws + (ky * KW + kx) * p.tap_pitch;
          const T* ip = in_g + static_cast<int64_t>(iy) * p.in_s[2] + static_cast<int64_t>(ix) * p.in_s[3];
          // kBatch channels' loads issued before their multiply-adds (most are L2 hits: a warp's
          // lanes read a few elements of a row, and the other channel blocks read the same ones).
          int ci = 0;
          for (; ci + kBatch <= p.Cin_g; ci += kBatch, ip += kBatch * p.in_s[1], wt += kBatch * CPT)
            accumulate_channels<kBatch>(acc, ip, wt, valid, p.in_s[1], p.in_s[2]);
          for (; ci < p.Cin_g; ++ci, ip += p.in_s[1], wt += CPT)
            accumulate_channels<1>(acc, ip, wt, valid, p.in_s[1], p.in_s[2]);
        }
      }

      // Stores: for each row and channel, the warp's lanes write consecutive columns.
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        const int oy = oy0 + k * p.SH;
        if (oy >= p.Hout) break;
        T* op = out_g + static_cast<int64_t>(oy) * p.out_s[2] + static_cast<int64_t>(ox) * p.out_s[3];
#pragma unroll
        for (int j = 0; j < CPT; ++j) {
          if (co_l0 + j < p.Cout_g) op[j * p.out_s[1]] = static_cast<T>(acc[k][j] + bv[j]);
        }
      }
    }
  }
}

// Channels a thread computes: 16, or 8 where a group has fewer than 16 (the rest would be padding).
int channels_per_thread(const Geometry& g) { return g.Cout_g >= 16 ? 16 : 8; }

int64_t weight_smem_bytes(const Geometry& g, int cpt) {
  return g.KH * g.KW * (g.Cin_g * cpt + kTapPad) * static_cast<int64_t>(sizeof(float));
}

// Multiply-add count along one axis: the (output, tap) pairs whose input coordinate lies in the
// input, i.e. for each tap the input coordinates i in [0, in) with i * S - P + t * D in [0, out).
int64_t axis_pairs(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  int64_t pairs = 0;
  for (int64_t t = 0; t < kernel; ++t) {
    // 0 <= i * S - P + t * D < out  <=>  ceil((P - t D) / S) <= i <= floor((out - 1 + P - t D) / S)
    const int64_t lo = std::max<int64_t>(0, -floor_div<int64_t>(t * dilation - padding, stride));
    const int64_t hi = std::min<int64_t>(in - 1, floor_div<int64_t>(out - 1 + padding - t * dilation, stride));
    if (hi >= lo) pairs += hi - lo + 1;
  }
  return pairs;
}

// Test knob CONVT_FWD_STORE_BOUND=0: the rule below never takes this kernel (CONVT_FWD_PATH=store_bound
// still forces it). Read once.
bool store_bound_rule_allowed() {
  static const bool on = !env_equals("CONVT_FWD_STORE_BOUND", "0");
  return on;
}

template <typename T, int CPT>
void launch_typed(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                  const Geometry& g, const at::Tensor& output) {
  StoreBoundParams p{};
  p.y = make_axis_taps(g.KH, g.SH, g.PH, g.DH);
  p.x = make_axis_taps(g.KW, g.SW, g.PW, g.DW);
  p.H = static_cast<int>(g.H), p.W = static_cast<int>(g.W);
  p.Hout = static_cast<int>(g.Hout), p.Wout = static_cast<int>(g.Wout), p.SH = static_cast<int>(g.SH);
  p.Cin_g = static_cast<int>(g.Cin_g), p.Cout_g = static_cast<int>(g.Cout_g);
  p.groups = static_cast<int>(g.groups);
  p.co_blocks = static_cast<int>((g.Cout_g + CPT - 1) / CPT);
  for (int i = 0; i < 4; ++i) {
    p.in_s[i] = input.stride(i);
    p.w_s[i] = weight.stride(i);
    p.out_s[i] = output.stride(i);
  }
  const int64_t bands = (g.Hout + g.SH * kRows - 1) / (g.SH * kRows);
  const int64_t items = bands * g.SH * g.Wout;
  const int64_t planes = g.N * g.groups * p.co_blocks;
  p.items = static_cast<int>(items);
  p.planes = static_cast<int>(planes);
  p.tap_pitch = static_cast<int>(g.Cin_g * CPT + kTapPad);
  // Items per block: 8 a thread, so that a block's weight staging is a small part of its work,
  // fewer where that leaves under 8 blocks a multiprocessor to spread.
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  int64_t per_thread = 8;
  auto blocks_for = [&](int64_t pt) { return planes * ((items + kThreads * pt - 1) / (kThreads * pt)); };
  while (per_thread > 1 && blocks_for(per_thread) < 8 * sms) per_thread /= 2;
  p.items_per_block = static_cast<int>(kThreads * per_thread);
  const int64_t chunks = (items + p.items_per_block - 1) / p.items_per_block;
  const int smem = static_cast<int>(weight_smem_bytes(g, CPT));
  const T* bias_ptr = (bias.has_value() && bias->defined()) ? bias->data_ptr<T>() : nullptr;
  store_bound_kernel<T, CPT><<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(std::min<int64_t>(planes, 65535))),
                               kThreads, smem, at::cuda::getCurrentCUDAStream()>>>(
      input.data_ptr<T>(), weight.data_ptr<T>(), bias_ptr, output.data_ptr<T>(), p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool store_bound_supported(const Geometry& g, const at::Tensor& output) {
  const auto dtype = output.scalar_type();
  if (dtype != at::kFloat && dtype != at::kHalf && dtype != at::kBFloat16) return false;
  if (g.Cin_g < 2 || g.Cout_g < 8) return false;  // (depthwise and tiny groups: their own kernels)
  if (weight_smem_bytes(g, channels_per_thread(g)) > kSmemLimit) return false;
  // 32-bit index math: extents, items per plane group (rows rounded up to whole bands), grid.
  const int64_t lim = int64_t(1) << 30;
  const int cpt = channels_per_thread(g);
  const int64_t items = (g.Hout + g.SH * kRows) * g.Wout;
  const int64_t planes = g.N * g.groups * ((g.Cout_g + cpt - 1) / cpt);
  return g.H < lim && g.W < lim && g.Hout < lim && g.Wout < lim && g.KH * g.DH < lim && g.KW * g.DW < lim &&
         g.Hout + g.PH < lim && g.Wout + g.PW < lim && g.Cin_g * cpt < lim && g.N < lim && items < lim &&
         planes < lim;
}

bool store_bound_suitable(const Geometry& g, const at::Tensor& output) {
  if (!store_bound_rule_allowed() || !store_bound_supported(g, output)) return false;
  // NCHW rows (unit column stride): the lanes' stores are consecutive elements.
  if (output.stride(3) != 1 || output.stride(1) == 1) return false;
  // Strided (interleaved phases, where the tensor-core kernels' stores scatter), and large.
  if ((g.SH == 1 && g.SW == 1) || output.numel() < kMinOutputElements) return false;
  const double fma_per_output = static_cast<double>(g.Cin_g) *
                                static_cast<double>(axis_pairs(g.H, g.Hout, g.KH, g.SH, g.PH, g.DH)) /
                                static_cast<double>(g.Hout) *
                                static_cast<double>(axis_pairs(g.W, g.Wout, g.KW, g.SW, g.PW, g.DW)) /
                                static_cast<double>(g.Wout);
  return fma_per_output <= kMaxFmaPerOutput;
}

void launch_store_bound(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                        const Geometry& g, const at::Tensor& output) {
  CONVT_TRACE("cuda.forward.store_bound");
  TORCH_CHECK(store_bound_supported(g, output), "convt: launch_store_bound called where it does not apply");
  if (output.numel() == 0) return;  // (an empty batch: nothing to write, and no grid to launch)
  const c10::cuda::CUDAGuard guard(input.device());
  // Bias must be 1-D with unit stride for bias[co]; it is tiny, so copy if needed.
  std::optional<at::Tensor> b = bias;
  if (b.has_value() && b->defined() && b->stride(0) != 1) b = b->contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "convt_forward_store_bound", [&] {
    if constexpr (!std::is_same_v<scalar_t, double>) {
      if (channels_per_thread(g) == 16)
        launch_typed<scalar_t, 16>(input, weight, b, g, output);
      else
        launch_typed<scalar_t, 8>(input, weight, b, g, output);
    }
  });
}

}  // namespace fwd
}  // namespace convt
