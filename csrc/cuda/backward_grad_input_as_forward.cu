// grad_input through the forward kernels.
//
// grad_input of a transposed convolution is a strided correlation of grad_output with the
// weight. geometry.h (AsForwardAxis) rewrites it as a stride-1 transposed convolution:
// grad_output's residue planes become extra input channels, the taps are flipped and
// regrouped per plane. That is exactly what the forward kernels compute, so grad_input gets
// the forward's tensor-core paths (wgmma, cuBLAS + gather, mma.sync) for the price of
//  - a weight re-layout (weight-sized), and
//  - at stride > 1, one pass that copies grad_output into its planes (read + write of
//    grad_output; at stride 1 the forward reads grad_output in place).
// The flattened kernel has padding slots where a plane has fewer taps than the longest one
// (e.g. kernel 3, stride 2: 9 taps in 2 x 2 planes x 2 x 2 slots); grad_input_as_forward_shape
// says how much. backward.cu takes this path at stride 1 (no copy, no padding slot), and at
// stride > 1 where the native kernel is weakest (16-bit dtypes, narrow channel groups).
#include <ATen/Dispatch.h>

#include "backward_common.cuh"
#include "kernels.h"

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = 256;

struct AsForwardPlan {
  AsForwardAxis y, x;
  bool copy_planes;  // stride > 1 (or a shift the forward's padding cannot express)
  int64_t pitch = 0; // plane row length (copy_planes): the extent rounded up to 8 elements
  Geometry fwd;      // the stride-1 transposed convolution that yields grad_input
};

// The forward geometry: input = planes [N, groups * Cout_g * planes, Ey, Ex] (or
// grad_output itself), output = grad_input [N, Cin, H, W].
AsForwardPlan make_plan(const Geometry& g) {
  AsForwardPlan p;
  p.y = as_forward_axis(g.KH, g.SH, g.PH, g.DH, g.H);
  p.x = as_forward_axis(g.KW, g.SW, g.PW, g.DW, g.W);
  Geometry& f = p.fwd;
  f.N = g.N;
  f.groups = g.groups;
  f.Cout_g = g.Cin_g;
  f.Cout = g.Cin;
  f.Hout = g.H;
  f.Wout = g.W;
  f.KH = p.y.taps;
  f.KW = p.x.taps;
  f.SH = f.SW = 1;
  f.DH = p.y.dil;
  f.DW = p.x.dil;
  f.OPH = f.OPW = 0;
  // Stride 1, and grad_output shifted by -P is reachable with a non-negative forward padding
  // and no output_padding: read grad_output in place.
  const int64_t pad_y = p.y.dil * (p.y.taps - 1) + (p.y.ok ? p.y.q0[0] : 0);
  const int64_t pad_x = p.x.dil * (p.x.taps - 1) + (p.x.ok ? p.x.q0[0] : 0);
  p.copy_planes = !(g.SH == 1 && g.SW == 1 && g.OPH == 0 && g.OPW == 0 && pad_y >= 0 && pad_x >= 0);
  if (p.copy_planes) {
    f.Cin_g = g.Cout_g * p.y.nres * p.x.nres;
    f.H = p.y.extent;
    // Columns past the extent are zeros that no kept output reads (an output column x reads
    // plane columns x .. x + PW < extent); they only make every row start 16-byte aligned,
    // which the forward's vector loads need (unaligned rows take its element loads).
    p.pitch = (p.x.extent + 7) / 8 * 8;
    f.W = p.pitch;
    f.PH = p.y.dil * (p.y.taps - 1);
    f.PW = p.x.dil * (p.x.taps - 1);
  } else {
    f.Cin_g = g.Cout_g;
    f.H = g.Hout;
    f.W = g.Wout;
    f.PH = pad_y;
    f.PW = pad_x;
  }
  f.Cin = f.Cin_g * g.groups;
  return p;
}

// planes[n][ch][sy][sx][u][v] = grad_output[n][ch][(u + q0y) SH + ry][(v + q0x) SW + rx],
// zero outside grad_output and in the row padding v >= Ex (rows are `pitch` >= Ex elements
// apart, a multiple of 8, so that the forward's 16-byte row loads line up).
//
// One warp per plane row set (n, ch, sy, u): the grad_output row those rows come from is
// read once per residue sx, its lanes walking v (the SW-strided reads of one sx and the next
// meet in L1), and each plane row is written with consecutive lanes. The div/mod decode runs
// once per row set, not per element: the first version decoded every element (five runtime
// divisions) and ran at 1 TB/s (kb2_5 fp32 4.4 ms for 4.3 GB, run AO).
template <typename T>
__global__ __launch_bounds__(kThreads) void copy_planes_kernel(
    const T* __restrict__ go, T* __restrict__ planes, Strides4 gs, AsForwardAxis ay,
    AsForwardAxis ax, int64_t row_sets, int64_t Cout, int64_t Hout, int64_t Wout, int64_t SH,
    int64_t SW, int pitch) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x % 32;
  const int ex = static_cast<int>(ax.extent);
  for (int64_t set = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; set < row_sets;
       set += static_cast<int64_t>(gridDim.x) * kWarps) {
    // set = ((n * Cout + ch) * nres_y + sy) * Ey + u
    int64_t r = set;
    const int64_t u = r % ay.extent;
    r /= ay.extent;
    const int sy = static_cast<int>(r % ay.nres);
    r /= ay.nres;
    const int64_t ch = r % Cout, n = r / Cout;
    const int64_t oy = (u + ay.q0[sy]) * SH + ay.residue[sy];
    const bool row_ok = oy >= 0 && oy < Hout;
    const T* src = go + n * gs.s0 + ch * gs.s1 + (row_ok ? oy : 0) * gs.s2;
    // Plane row (sx, u) of this set: ((set - u) * nres_x + sx * Ey + u) * pitch.
    T* dst = planes + ((set - u) * ax.nres + u) * pitch;
    for (int sx = 0; sx < ax.nres; ++sx, dst += ay.extent * pitch) {
      const int64_t ox0 = ax.q0[sx] * SW + ax.residue[sx];
      for (int v = lane; v < pitch; v += 32) {
        const int64_t ox = ox0 + static_cast<int64_t>(v) * SW;
        const bool ok = row_ok && v < ex && ox >= 0 && ox < Wout;
        dst[v] = ok ? src[ox * gs.s3] : T(0);
      }
    }
  }
}

// The forward's weight [groups * Cout_g * planes, Cin_g, Ly, Lx] (contiguous) from the
// transposed convolution's weight [Cin, Cout_g, KH, KW] (any strides): entry
// (grp, co, sy, sx, ci, ty, tx) is w[grp * Cin_g + ci][co][ky][kx] for the tap that plane
// (sy, sx) holds at flipped slot (ty, tx), or zero for a padding slot. Weight-sized.
template <typename T>
__global__ __launch_bounds__(kThreads) void flatten_weight_kernel(
    const T* __restrict__ w, T* __restrict__ wf, Strides4 ws, AsForwardAxis ay, AsForwardAxis ax,
    int64_t total, int64_t Cin_g, int64_t Cout_g, Geometry g) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t r = i;
    const int64_t tx = r % ax.taps;
    r /= ax.taps;
    const int64_t ty = r % ay.taps;
    r /= ay.taps;
    const int64_t ci = r % Cin_g;
    r /= Cin_g;
    const int sx = static_cast<int>(r % ax.nres);
    r /= ax.nres;
    const int sy = static_cast<int>(r % ay.nres);
    r /= ay.nres;
    const int64_t co = r % Cout_g, grp = r / Cout_g;
    const int64_t ky = as_forward_tap(ay, sy, ty, g.KH, g.SH, g.PH, g.DH);
    const int64_t kx = as_forward_tap(ax, sx, tx, g.KW, g.SW, g.PW, g.DW);
    wf[i] = (ky < 0 || kx < 0) ? T(0)
                               : w[(grp * Cin_g + ci) * ws.s0 + co * ws.s1 + ky * ws.s2 + kx * ws.s3];
  }
}

unsigned grid_for(int64_t total) {
  return static_cast<unsigned>(std::min<int64_t>(ceil_div(total, kThreads), int64_t(sm_count()) * 16));
}

}  // namespace

AsForwardShape grad_input_as_forward_shape(const Geometry& g) {
  const AsForwardPlan p = make_plan(g);
  if (!p.y.ok || !p.x.ok) return {0, 0.0, false};
  const double slots = double(p.y.nres * p.y.taps) * double(p.x.nres * p.x.taps);
  return {p.y.taps * p.x.taps, double(g.KH * g.KW) / slots, p.copy_planes};
}

void grad_input_as_forward(const at::Tensor& grad_output, const at::Tensor& weight,
                           const Geometry& g, const at::Tensor& grad_input) {
  const AsForwardPlan p = make_plan(g);
  TORCH_CHECK(p.y.ok && p.x.ok, "convt: grad_input_as_forward called with a stride above ",
              AsForwardAxis::kMaxResidues);
  const Geometry& f = p.fwd;
  auto stream = at::cuda::getCurrentCUDAStream();
  at::Tensor wf = at::empty({f.Cin, f.Cout_g, f.KH, f.KW}, weight.options());
  at::Tensor planes;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(),
                                  "convt_grad_input_as_forward", [&] {
    const int64_t wtotal = wf.numel();
    flatten_weight_kernel<scalar_t><<<grid_for(wtotal), kThreads, 0, stream>>>(
        weight.const_data_ptr<scalar_t>(), wf.mutable_data_ptr<scalar_t>(), strides_of(weight),
        p.y, p.x, wtotal, g.Cin_g, g.Cout_g, g);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if (p.copy_planes) {
      // The copy walks grad_output rows; a channels_last grad_output would have its lanes
      // each read a different pixel's channel, so it is read as NCHW (backward.cu already
      // passes the NCHW copy that grad_weight and grad_bias share: then this is a no-op).
      const at::Tensor go = to_nchw(grad_output);
      planes = at::empty({f.N, f.Cin, f.H, f.W}, go.options());
      const int64_t row_sets = g.N * g.Cout * p.y.nres * p.y.extent;
      const int64_t warps_per_block = kThreads / 32;
      const unsigned blocks = static_cast<unsigned>(
          std::min<int64_t>(ceil_div(row_sets, warps_per_block), int64_t(sm_count()) * 16));
      copy_planes_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), planes.mutable_data_ptr<scalar_t>(), strides_of(go),
          p.y, p.x, row_sets, g.Cout, g.Hout, g.Wout, g.SH, g.SW, static_cast<int>(p.pitch));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  // The implicit-GEMM families (not cuBLAS + col2im, whose per-tap column buffers cost more
  // than the GEMM on these many-channel, few-tap problems: kb2_5 fp32 4.6 ms, run AO).
  const ForwardFamily family = f.KH * f.KW > 1 ? ForwardFamily::kImplicitGemm : ForwardFamily::kAuto;
  forward_cuda(p.copy_planes ? planes : grad_output, wf, std::nullopt, f, grad_input, family);
}

}  // namespace bwd
}  // namespace convt
