// grad_input through the forward kernels.
//
// grad_input of a transposed convolution is a strided correlation of grad_output with the
// weight. geometry.h (AsForwardAxis) rewrites it as a stride-1 transposed convolution:
// grad_output's residue planes become extra input channels, the taps are flipped and
// regrouped per plane. That is exactly what the forward kernels compute, so grad_input gets
// the forward's tensor-core paths (wgmma, cuBLAS + gather, mma.sync) for the price of
//  - a weight re-layout (weight-sized), and
//  - at stride > 1, one pass that copies grad_output into its planes (read + write of
//    grad_output; at stride 1 the forward reads grad_output in place, and so does the
//    warp-specialized forward at stride > 1 for channels_last planes: one tensor map per
//    residue, residues_in_place below).
// The flattened kernel has padding slots where a plane has fewer taps than the longest one
// (e.g. kernel 3, stride 2: 9 taps in 2 x 2 planes x 2 x 2 slots); grad_input_as_forward_shape
// says how much. backward.cu takes this path at stride 1 (no copy, no padding slot), and at
// stride > 1 where the native kernel is weakest (16-bit dtypes, narrow channel groups).
//
// channels_last (grad_output and grad_input both): the planes are channels_last too, their
// channels ordered (group, residue, channel) so that one residue's channels of a pixel are a
// contiguous run of grad_output's (copied as 16-byte vectors), and the forward reads them in
// place. NCHW planes order their channels (group, channel, residue).
//
// NCHW 16-bit at stride > 1 (nchw_via_channels_last): grad_output is transposed to channels_last
// once and read in place as residues by the warp-specialized forward, which writes the NCHW
// grad_input itself (its NCHW epilogue; the forward is stride 1, so its rows are whole runs), in
// place of the NCHW plane copy and the NCHW wgmma forward over the planes. The copy is as large
// as the planes it replaces. H100 run QU (device us per training step, CONVT_BWD_GI_VIA_CL=0 ->
// default): bf16 kb2_93 3833 -> 2724, kb2_2 6067 -> 4650, kb2_5 7376 -> 6926; fp16 kb2_93 3839 -> 2763.
#include <ATen/Dispatch.h>

#include <algorithm>

#include "backward_common.cuh"
#include "env_knob.h"
#include "forward_launch.cuh"
#include "kernels.h"
#include "pack.cuh"
#include "tf32_flag.h"

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = 256;

struct AsForwardPlan {
  AsForwardAxis y, x;
  bool copy_planes;  // stride > 1 (or a shift the forward's padding cannot express)
  bool planes_cl;    // channels_last planes, channels (group, residue, channel)
  int64_t pitch = 0; // plane row length (copy_planes): the extent rounded up to 8 elements
  Geometry fwd;      // the stride-1 transposed convolution that yields grad_input
};

// The forward geometry: input = planes [N, groups * Cout_g * planes, Ey, Ex] (or
// grad_output itself), output = grad_input [N, Cin, H, W].
AsForwardPlan make_plan(const Geometry& g, bool planes_cl = false) {
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
  p.planes_cl = p.copy_planes && planes_cl;
  if (p.copy_planes) {
    f.Cin_g = g.Cout_g * p.y.nres * p.x.nres;
    f.H = p.y.extent;
    // Columns past the extent are zeros that no kept output reads (an output column x reads
    // plane columns x .. x + PW < extent); in NCHW they make every row start 16-byte aligned,
    // which the forward's vector loads need (unaligned rows take its element loads).
    // channels_last rows need no padding (a pixel's channels are the vector).
    p.pitch = p.planes_cl ? p.x.extent : (p.x.extent + 7) / 8 * 8;
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

// channels_last planes: planes[n][u][v][grp][sy][sx][co] = grad_output[n][oy][ox][grp*Cout_g + co]
// (oy, ox as above), zero outside grad_output. A plane pixel is per_pixel V-element vectors
// (V = 16 bytes of T where Cout_g allows, else 1), a residue's Cout_g channels one contiguous
// run of its source pixel. Lane k of a warp owns vector k (+ 32 per round) of every pixel, its
// residue decoded once; a warp walks whole plane rows (n, u), kPlanesUnroll pixels at a time
// with all their loads issued before the stores, and no division per pixel. The first form
// (a warp per pixel, its decode per pixel and lane, one load per lane at a time) moved kb2_5's
// bf16 grad_output at 2.3 TB/s (0.93 ms for 2.15 GB; run IA).
constexpr int kPlanesUnroll = 4;

template <typename T, typename Vec>
__global__ __launch_bounds__(kThreads) void copy_planes_cl_kernel(
    const Vec* __restrict__ go, Vec* __restrict__ planes, AsForwardAxis ay, AsForwardAxis ax,
    int64_t rows, int groups, int cog_vecs, int64_t Hout, int64_t Wout, int64_t SH, int64_t SW) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x % 32;
  const int per_pixel = cog_vecs * ax.nres * ay.nres * groups;
  const int64_t go_pixel = static_cast<int64_t>(groups) * cog_vecs;  // vectors per grad_output pixel
  const int64_t ex = ax.extent;
  for (int k0 = 0; k0 < per_pixel; k0 += 32) {
    const int k = k0 + lane;
    const bool k_ok = k < per_pixel;
    const int kk = k_ok ? k : 0;
    const int cv = kk % cog_vecs, rest = kk / cog_vecs;
    const int sx = rest % ax.nres, rest2 = rest / ax.nres;
    const int sy = rest2 % ay.nres, grp = rest2 / ay.nres;
    const int64_t ox0 = ax.q0[sx] * SW + ax.residue[sx];  // ox of plane column 0
    for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; row < rows;
         row += static_cast<int64_t>(gridDim.x) * kWarps) {
      const int64_t u = row % ay.extent, n = row / ay.extent;
      const int64_t oy = (u + ay.q0[sy]) * SH + ay.residue[sy];
      const bool row_ok = k_ok && oy >= 0 && oy < Hout;
      const Vec* src = go + (n * Hout + (row_ok ? oy : 0)) * Wout * go_pixel + grp * cog_vecs + cv;
      Vec* dst = planes + row * ex * per_pixel + k;
      for (int64_t v0 = 0; v0 < ex; v0 += kPlanesUnroll) {
        Vec val[kPlanesUnroll];
#pragma unroll
        for (int i = 0; i < kPlanesUnroll; ++i) {
          const int64_t ox = ox0 + (v0 + i) * SW;
          val[i] = row_ok && v0 + i < ex && ox >= 0 && ox < Wout ? src[ox * go_pixel] : Vec{};
        }
#pragma unroll
        for (int i = 0; i < kPlanesUnroll; ++i) {
          if (k_ok && v0 + i < ex) dst[(v0 + i) * per_pixel] = val[i];
        }
      }
    }
  }
}

// The forward's weight [groups * Cout_g * planes, Cin_g, Ly, Lx] (contiguous) from the
// transposed convolution's weight [Cin, Cout_g, KH, KW] (any strides): entry
// (grp, co, sy, sx, ci, ty, tx) is w[grp * Cin_g + ci][co][ky][kx] for the tap that plane
// (sy, sx) holds at flipped slot (ty, tx), or zero for a padding slot; with `residue_major`
// (channels_last planes) the first index runs (grp, sy, sx, co). Weight-sized.
template <typename T>
__global__ __launch_bounds__(kThreads) void flatten_weight_kernel(
    const T* __restrict__ w, T* __restrict__ wf, Strides4 ws, AsForwardAxis ay, AsForwardAxis ax,
    int64_t total, int64_t Cin_g, int64_t Cout_g, Geometry g, bool residue_major) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t r = i;
    const int64_t tx = r % ax.taps;
    r /= ax.taps;
    const int64_t ty = r % ay.taps;
    r /= ay.taps;
    const int64_t ci = r % Cin_g;
    r /= Cin_g;
    int sx, sy;
    int64_t co, grp;
    if (residue_major) {
      co = r % Cout_g;
      r /= Cout_g;
      sx = static_cast<int>(r % ax.nres);
      r /= ax.nres;
      sy = static_cast<int>(r % ay.nres);
      grp = r / ay.nres;
    } else {
      sx = static_cast<int>(r % ax.nres);
      r /= ax.nres;
      sy = static_cast<int>(r % ay.nres);
      r /= ay.nres;
      co = r % Cout_g;
      grp = r / Cout_g;
    }
    const int64_t ky = as_forward_tap(ay, sy, ty, g.KH, g.SH, g.PH, g.DH);
    const int64_t kx = as_forward_tap(ax, sx, tx, g.KW, g.SW, g.PW, g.DW);
    wf[i] = (ky < 0 || kx < 0) ? T(0)
                               : w[(grp * Cin_g + ci) * ws.s0 + co * ws.s1 + ky * ws.s2 + kx * ws.s3];
  }
}

// Knob CONVT_BWD_GI_PLANES=copy: channels_last residue planes are always copied, never read
// in place through tensor maps (A/B measurements); it also turns off the NCHW form below. Read once.
bool residue_maps_allowed() {
  static const bool on = !env_equals("CONVT_BWD_GI_PLANES", "copy");
  return on;
}

// channels_last planes read in place: residue (sy, sx) is the subgrid of grad_output's pixels
// (q SH + ry, q' SW + rx), and plane pixel (u, v) is its pixel (u + q0y, v + q0x), zero
// outside grad_output and past the plane's extent (copy_planes_cl_kernel's contents, without
// the copy). Where q0 > 0 the subgrid starts at q0, so that plane pixels below 0 read zeros.
// False where the residues cannot be mapped: more than kWsMaxResidueMaps of them, groups, an
// empty residue (the copy writes its zeros), grad_output's pixels not whole 16-byte runs or its
// data not 16-byte aligned. (The launch can still decline: launch_wgmma_ws_residues's plan.)
bool residue_maps(const at::Tensor& grad_output, const Geometry& g, const AsForwardPlan& p, fwd::WsResidueInput& in) {
  if (!residue_maps_allowed() || g.groups != 1 || p.y.nres * p.x.nres > fwd::kWsMaxResidueMaps) return false;
  if ((g.Cout * grad_output.element_size()) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(grad_output.const_data_ptr()) % 16 != 0)
    return false;
  in = fwd::WsResidueInput{};
  in.n = p.y.nres * p.x.nres;
  in.C = g.Cout;
  in.stride_x = g.SW * g.Cout;
  in.stride_y = g.SH * g.Wout * g.Cout;
  in.stride_n = g.Hout * g.Wout * g.Cout;
  // One axis: the subgrid's first index, its length and the plane -> subgrid shift.
  auto axis = [](int64_t q0, int64_t r, int64_t stride, int64_t out, int64_t extent, int64_t& first,
                 int64_t& len, int64_t& shift) {
    const int64_t full = r < out ? ceil_div(out - r, stride) : 0;  // subgrid length from q = 0
    first = q0 > 0 ? q0 : 0;
    shift = q0 > 0 ? 0 : q0;
    len = std::min(full - first, extent + shift);
  };
  for (int sy = 0; sy < p.y.nres; ++sy) {
    for (int sx = 0; sx < p.x.nres; ++sx) {
      fwd::WsResidue& rs = in.r[sy * p.x.nres + sx];
      int64_t fy, fx;
      axis(p.y.q0[sy], p.y.residue[sy], g.SH, g.Hout, p.y.extent, fy, rs.H, rs.dy);
      axis(p.x.q0[sx], p.x.residue[sx], g.SW, g.Wout, p.x.extent, fx, rs.W, rs.dx);
      if (rs.H <= 0 || rs.W <= 0) return false;
      rs.offset = ((fy * g.SH + p.y.residue[sy]) * g.Wout + fx * g.SW + p.x.residue[sx]) * g.Cout;
    }
  }
  return true;
}

bool residues_in_place(const at::Tensor& grad_output, const at::Tensor& wf, const Geometry& g,
                       const AsForwardPlan& p, const at::Tensor& grad_input) {
  fwd::WsResidueInput in{};
  return residue_maps(grad_output, g, p, in) && fwd::launch_wgmma_ws_residues(grad_output, in, wf, p.fwd, grad_input);
}

// Knob CONVT_BWD_GI_VIA_CL: unset = the rule below; 0 = never (NCHW planes, for A/B
// measurements); all = float32 in TF32 wherever the path applies (measuring). Read once.
KnobMode nchw_via_channels_last_mode() {
  static const KnobMode mode = env_mode("CONVT_BWD_GI_VIA_CL");
  return mode;
}

// NCHW grad_output and grad_input through a channels_last copy of grad_output read as residues in
// place (see the header): 16-bit, or float32 in TF32 where every slot of the flattened kernel is
// a tap and there is more than one (kernel a multiple of the stride, not equal to it; `all`:
// any); one group, stride > 1 with at most 4 residue subgrids, whole 16-byte channel runs, Hopper.
// float32 (H100 run RA, device us per training step, native grad_input -> this path): kb2_93
// 5619 -> 5197, kb2_5 10579 -> 9969; with padding slots it loses, kb2_2 (k3 s2, 9 of 16 slots)
// 7806 -> 8662 (its copy, 2.0 ms for 2.1 GB, costs more than the native kernel saves); with one
// tap (kernel == stride: a 1 x 1 forward) it lost most, unet_up1 training 2.34 -> 3.93 ms (run RE).
bool nchw_via_channels_last(const at::Tensor& grad_output, const at::Tensor& grad_input, const Geometry& g,
                            const AsForwardPlan& p) {
  const auto dtype = grad_output.scalar_type();
  const KnobMode mode = nchw_via_channels_last_mode();
  if (mode == KnobMode::kNever || !residue_maps_allowed()) return false;
  const bool every_slot_a_tap = p.y.ok && p.x.ok && g.KH * g.KW == p.y.nres * p.y.taps * p.x.nres * p.x.taps;
  const bool tf32_by_rule = every_slot_a_tap && p.y.taps * p.x.taps > 1;
  const bool tf32 = dtype == at::kFloat && allow_tf32_conv() && (mode == KnobMode::kAll || tf32_by_rule);
  if (dtype != at::kBFloat16 && dtype != at::kHalf && !tf32) return false;
  if (!p.y.ok || !p.x.ok || !p.copy_planes || g.groups != 1 || p.y.nres * p.x.nres > fwd::kWsMaxResidueMaps)
    return false;
  if (grad_output.dim() != 4 || !grad_output.is_contiguous() || !grad_input.is_contiguous()) return false;
  if ((g.Cout * grad_output.element_size()) % 16 != 0 || g.Cin < 32) return false;
  return fwd::wgmma_available(grad_output);
}

unsigned grid_for(int64_t total) {
  return static_cast<unsigned>(std::min<int64_t>(ceil_div(total, kThreads), int64_t(sm_count()) * 16));
}

}  // namespace

bool grad_input_nchw_via_channels_last(const at::Tensor& grad_output, const at::Tensor& grad_input,
                                       const Geometry& g) {
  return nchw_via_channels_last(grad_output, grad_input, g, make_plan(g));
}

bool grad_input_forward_copies_grad_output(const at::Tensor& grad_output, const at::Tensor& grad_input,
                                           const Geometry& g) {
  const AsForwardPlan p = make_plan(g);
  return p.y.ok && p.x.ok && !p.copy_planes && forward_copies_input_to_channels_last_once(grad_output, p.fwd, grad_input);
}

AsForwardShape grad_input_as_forward_shape(const Geometry& g) {
  const AsForwardPlan p = make_plan(g);
  if (!p.y.ok || !p.x.ok) return {0, 0.0, false};
  const double slots = double(p.y.nres * p.y.taps) * double(p.x.nres * p.x.taps);
  return {p.y.taps * p.x.taps, double(g.KH * g.KW) / slots, p.copy_planes};
}

bool grad_input_as_forward_planes_cl(const at::Tensor& grad_output, const at::Tensor& grad_input,
                                     const Geometry& g) {
  const AsForwardPlan p = make_plan(g);
  if (!p.copy_planes || !p.y.ok || !p.x.ok || !channels_last_only(grad_output) || !channels_last_only(grad_input))
    return false;
  // Only where the forward reads channels_last planes in place: the wgmma kernel (Hopper, at
  // least 32 output channels per group, i.e. Cin_g here), with a group's plane channels whole
  // 16-byte quanta. The other forward families would copy the planes to NCHW with a generic
  // transpose (kb1_75, 8 channels per group: bf16 forward+backward 4.35 -> 6.18 ms, run BR).
  const int64_t quantum = 16 / static_cast<int64_t>(grad_output.element_size());
  return g.Cin_g >= 32 && fwd::wgmma_available(grad_output) &&
         (g.Cout_g * p.y.nres * p.x.nres) % quantum == 0;
}

bool grad_input_residues_read_in_place(const at::Tensor& grad_output, const at::Tensor& grad_input,
                                       const Geometry& g) {
  if (!grad_input_as_forward_planes_cl(grad_output, grad_input, g)) return false;
  const AsForwardPlan p = make_plan(g, true);
  fwd::WsResidueInput in{};
  return residue_maps(grad_output, g, p, in);
}

void grad_input_as_forward(const at::Tensor& grad_output_in, const at::Tensor& weight,
                           const Geometry& g, const at::Tensor& grad_input, const at::Tensor& grad_output_cl) {
  // NCHW through a channels_last grad_output where nchw_via_channels_last says so: the planes
  // are then channels_last (channel order (group, residue, channel), which the weight follows).
  const bool via_cl = nchw_via_channels_last(grad_output_in, grad_input, g, make_plan(g));
  const at::Tensor grad_output =
      !via_cl ? grad_output_in : grad_output_cl.defined() ? grad_output_cl : to_channels_last(grad_output_in);
  const AsForwardPlan p = make_plan(g, via_cl || grad_input_as_forward_planes_cl(grad_output, grad_input, g));
  TORCH_CHECK(p.y.ok && p.x.ok, "convt: grad_input_as_forward called with a stride above ",
              AsForwardAxis::kMaxResidues);
  const Geometry& f = p.fwd;
  auto stream = at::cuda::getCurrentCUDAStream();
  at::Tensor wf = at::empty({f.Cin, f.Cout_g, f.KH, f.KW}, weight.options());
  at::Tensor planes;
  bool in_place = false;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(),
                                  "convt_grad_input_as_forward", [&] {
    const int64_t wtotal = wf.numel();
    flatten_weight_kernel<scalar_t><<<grid_for(wtotal), kThreads, 0, stream>>>(
        weight.const_data_ptr<scalar_t>(), wf.mutable_data_ptr<scalar_t>(), strides_of(weight),
        p.y, p.x, wtotal, g.Cin_g, g.Cout_g, g, p.planes_cl);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    // channels_last planes: the warp-specialized forward reads them in place where it applies
    // (kb2_5 bf16: the copy was 803 us of a 4.3 ms training step, run KB).
    if (p.planes_cl && residues_in_place(grad_output, wf, g, p, grad_input)) {
      in_place = true;
    } else if (p.planes_cl) {
      planes = at::empty({f.N, f.Cin, f.H, f.W}, grad_output.options().memory_format(at::MemoryFormat::ChannelsLast));
      constexpr int64_t kVecElems = 16 / sizeof(scalar_t);
      auto launch = [&](auto vec_tag) {
        using Vec = decltype(vec_tag);
        constexpr int64_t V = sizeof(Vec) / sizeof(scalar_t);
        const int64_t rows = f.N * f.H;  // plane rows (n, u)
        const unsigned blocks = static_cast<unsigned>(
            std::min<int64_t>(ceil_div(rows, int64_t(kThreads / 32)), int64_t(sm_count()) * 16));
        copy_planes_cl_kernel<scalar_t, Vec><<<blocks, kThreads, 0, stream>>>(
            reinterpret_cast<const Vec*>(grad_output.const_data_ptr<scalar_t>()),
            reinterpret_cast<Vec*>(planes.mutable_data_ptr<scalar_t>()), p.y, p.x, rows,
            static_cast<int>(g.groups), static_cast<int>(g.Cout_g / V), g.Hout, g.Wout, g.SH, g.SW);
      };
      launch_vector_or_element<scalar_t>(
          g.Cout_g % kVecElems == 0 && reinterpret_cast<uintptr_t>(grad_output.const_data_ptr()) % 16 == 0, launch);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else if (p.copy_planes) {
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
  if (in_place) return;
  // The implicit-GEMM families (not cuBLAS + col2im, whose per-tap column buffers cost more
  // than the GEMM on these many-channel, few-tap problems: kb2_5 fp32 4.6 ms, run AO).
  const ForwardFamily family = f.KH * f.KW > 1 ? ForwardFamily::kImplicitGemm : ForwardFamily::kAuto;
  // Without planes (stride 1) the forward reads grad_output itself, through the caller's
  // channels_last copy where it would copy it (grad_input_forward_copies_grad_output).
  forward_cuda(p.copy_planes ? planes : grad_output, wf, std::nullopt, f, grad_input, family,
               p.copy_planes ? at::Tensor() : grad_output_cl);
}

}  // namespace bwd
}  // namespace convt
