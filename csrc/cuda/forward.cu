// CUDA forward of conv_transpose2d: picks a kernel family per call (no timing, a
// fixed heuristic documented in docs/perf-notes-forward.md) and launches it.
//
//   forward_wgmma.cu   phase-decomposed implicit GEMM on Hopper's warpgroup MMA (float
//                      in TF32, bfloat16, float16): the fast path on sm_90a; strict float32
//                      by 3xTF32 where wgmma_3xtf32_suitable
//   forward_wgmma_ws.cu  its warp-specialized form for channels_last (16-bit, TF32): stride 1,
//                      and stride up to 4 by phases
//   forward_igemm.cu   the same GEMM on mma.sync (float in TF32 or 3xTF32, bfloat16,
//                      float16): other GPUs, strict fp32, shapes the wgmma tiling rejects
//   forward_kernel_stride.cu  kernel == stride, channels_last, sm_90a: one GEMM, depth-to-space
//                      epilogue (U-Net / Mask R-CNN up-sampling)
//   forward_gemm.cu    cuBLAS GEMM + col2im gather: few taps, >= 128 input channels,
//                      small images (U-Net/Mask R-CNN kernel == stride, DCGAN layers)
//   forward_depthwise.cu  one input channel per group (depthwise, any channel multiplier):
//                      16-byte vector stores, bandwidth-bound
//   forward_store_bound.cu  CUDA-core kernel for few multiply-adds per output element (sparse
//                      strided phases, small groups), NCHW output: store-bound, whole-sector stores
//   forward_direct.cu  direct gather kernel: float64, small per-group K (few channels
//                      per group), and the fallback for everything else
#include <cstdlib>
#include <string>
#include <type_traits>

#include "env_knob.h"
#include "forward_launch.cuh"
#include "kernels.h"
#include "layout.h"
#include "../host_trace.h"
#include "tf32_flag.h"

namespace convt {
namespace {

// Output phases along one axis: stride / gcd(stride, dilation).
int64_t phase_period(int64_t stride, int64_t dilation) { return stride / gcd64(stride, dilation); }

// Per-phase GEMM K = Cin_g * taps of a phase. Below this the tensor-core tile is mostly
// padding and the direct kernel (written once, vectorised over channels) wins.
bool small_k(const Geometry& g) {
  const int64_t py = phase_period(g.SH, g.DH), px = phase_period(g.SW, g.DW);
  const int64_t taps_y = (g.KH + py - 1) / py;
  const int64_t taps_x = (g.KW + px - 1) / px;
  return g.Cin_g * taps_y * taps_x < 16 || g.Cout_g < 8;
}

// CONVT_FWD_PATH=direct|depthwise|igemm|wgmma|gemm|store_bound forces a kernel family where it applies
// (tests and measurements; unsupported combinations fall back to the heuristic). Read once.
enum class Path { kAuto, kDirect, kDepthwise, kIgemm, kWgmma, kGemm, kStoreBound };
Path forced_path() {
  static const Path p = [] {
    const char* e = std::getenv("CONVT_FWD_PATH");
    if (e == nullptr) return Path::kAuto;
    const std::string v(e);
    if (v == "direct") return Path::kDirect;
    if (v == "depthwise") return Path::kDepthwise;
    if (v == "igemm") return Path::kIgemm;
    if (v == "wgmma") return Path::kWgmma;
    if (v == "gemm") return Path::kGemm;
    if (v == "store_bound") return Path::kStoreBound;
    return Path::kAuto;
  }();
  return p;
}

// Strict float32 (convolution TF32 off) on the 3xTF32 wgmma kernel (forward_wgmma.cu's kSplit)
// where it applies. Test knob CONVT_FWD_3XTF32=0 keeps the mma.sync kernel (forward_igemm.cu).
// Read once.
bool wgmma_3xtf32_allowed() {
  static const bool on = !env_equals("CONVT_FWD_3XTF32", "0");
  return on;
}

// Where the 3xTF32 wgmma forward beats the mma.sync one: full 64-channel M tiles and at least
// 3 taps per phase on average, so that its three MMAs per tap outweigh the larger stages and one
// block per multiprocessor. A rule fitted to run OB (H100, strict fp32 NCHW forward, ms, mma.sync
// -> wgmma): faster on kb1_57 17.1 -> 9.5, kb1_69 15.1 -> 6.8, kb2_10 16.3 -> 10.5, kb2_5 9.3 ->
// 7.7, kb2_93 6.3 -> 4.4 (9 or 4 taps per phase, 64-128 channels); slower on kb1_71 2.49 -> 2.87
// (32 output channels: half an M tile), kb2_2 6.27 -> 6.52 (2.25 taps per phase), kb1_81 1.53 ->
// 1.58 (0.36). Not a model.
bool wgmma_3xtf32_suitable(const Geometry& g) {
  const int64_t phases = phase_period(g.SH, g.DH) * phase_period(g.SW, g.DW);
  return g.Cout_g >= 64 && g.KH * g.KW >= 3 * phases;
}

// The channels_last route for NCHW input and output: the input read in place by the
// warp-specialized kernel where it can (fwd::wgmma_ws_reads_nchw: contiguous, rows of whole 16-byte
// pieces; a7aa152), else transposed to channels_last (layout.cu's tiles), then one of
//  - the warp-specialized kernel writing the NCHW output itself (forward_wgmma_ws.cu's kNchwOut
//    epilogue; one copy of the input, or none) where fwd::wgmma_ws_nchw_out_fast: at stride 1, where the output stays
//    in L2, or with paired column phases at stride 2 along W;
//  - the warp-specialized or the kernel == stride kernel into a channels_last temporary,
//    transposed into the output (two copies).
// Taken ahead of the cuBLAS family. Why: on some shapes the channels_last kernels beat the NCHW
// ones by more than the copies cost. Knob CONVT_FWD_VIA_CL: unset = the rule below, 0 = never,
// all = wherever the channels_last kernels have a plan (for measuring). Read once.
KnobMode via_channels_last_mode() {
  static const KnobMode mode = env_mode("CONVT_FWD_VIA_CL");
  return mode;
}

// Where the route wins; fitted to runs QH and QP (H100, NCHW forward ms, NCHW kernels -> route),
// not a model:
//  - kernel == stride with kernel width 2 (`ks_nchw`: the kernel writes the NCHW output itself;
//    one copy): every dtype. H100 run RC, maskrcnn NCHW forward ms: float32 0.833 (cuBLAS +
//    col2im) -> 0.569 (predicted ~0.62); bf16 0.397 with two copies, 0.411 here: level, and
//    without the channels_last output's temporary (205 MB there).
//  - kernel == stride otherwise (`ks`: it has a plan; two copies): 16-bit (bf16 maskrcnn 0.566 ->
//    0.416, unet_up1 0.530 -> 0.513, QH); float32 loses (maskrcnn 0.850 -> 0.932, unet_up1 0.810 ->
//    1.066).
//  - never where the cuBLAS family takes the NCHW input (its GEMM beat the warp-specialized
//    kernel 2-5x on dcgan_g2 and unet_up4, QH).
//  - 16-bit, stride > 1 (the NCHW wgmma kernel's phase outputs are interleaved along W; a
//    channels_last pixel's channels are one run whatever its phase; two copies above 40 MB of
//    output): kb2_2 2.101 -> 1.600, kb2_93 1.179 -> 0.918, dcgan_g4 0.093 -> 0.055 (QH), kb2_5
//    level.
//  - 16-bit, stride 1 (NCHW epilogue, its runs of up to 16 bytes per store since run TC): every
//    suite shape, ms NCHW kernel -> route: bf16 kb1_57 2.366 -> 2.062, kb2_10 2.399 -> 2.005,
//    kb1_65 0.900 -> 0.886 (before the runs, 64 channels lost: kb1_57 2.391 -> 2.572, QP); kb1_69,
//    kb1_71, kb1_78 took it before too (0.599, 0.765, 1.166 now).
//  - float32 (TF32), stride > 1 where the ws kernel writes NCHW itself: in L2, dcgan_g4 0.113 ->
//    0.085 (QP); paired phases (H100 run SG, ms): kb2_2 2.60 -> 1.70, kb2_93 1.65 -> 1.06; two
//    copies lose everywhere (QH).
//  - float32 (TF32), stride 1, with >= 128 or <= 32 output channels per group (runs TC, TD, ms,
//    since the faster layout copy of run RB): kb1_71 1.083 -> 0.951, kb1_69 2.458 -> 2.327;
//    training kb1_71 3.361 -> 3.092 (grad_input's forward takes the route too). 21 taps (kb1_78)
//    since the NCHW epilogue stages quarter tiles where that leaves more stages (run TI, device
//    us, NCHW kernel -> route): forward 1709 -> 1453, training 5690 -> 5257 (with half tiles, two
//    stages: 1741, 5726). With 64 channels the NCHW kernel is at its best and the route loses
//    where it copies the input: kb1_57 3.386 -> 3.925, kb1_65 1.521 -> 1.821 (1.589 with
//    quarters, TI), kb2_10 3.735 -> 4.058. Where the ws kernel reads the input in place
//    (`reads_in_place`: no copy at all) it wins at any channel count (run AA2, device us, NCHW
//    kernel -> route): kb1_57 3341 -> 2495, kb1_65 1519 -> 1370, kb2_10 3712 -> 2876.
bool via_channels_last_suitable(const Geometry& g, at::ScalarType dtype, bool ks, bool ks_nchw,
                                bool reads_in_place) {
  const KnobMode mode = via_channels_last_mode();
  if (mode != KnobMode::kRule) return mode == KnobMode::kAll;
  const bool half = dtype == at::kBFloat16 || dtype == at::kHalf;
  const bool strided = g.SH > 1 || g.SW > 1;
  if (ks_nchw) return true;
  if (ks) return half && (strided || g.Cout_g >= 128);
  if (fwd::gemm_col2im_suitable(g, dtype)) return false;
  if (half) return true;
  if (strided) return fwd::wgmma_ws_nchw_out_fast(g, dtype);
  return reads_in_place || g.Cout_g >= 128 || g.Cout_g <= 32;
}

// What the route runs for NCHW input and output (kNone: not taken): the kernel == stride forward
// where it has a plan (Mask R-CNN's 2 x 2 layer; with kernel width 2 it writes the NCHW output
// itself), else the warp-specialized one under the wgmma family's own conditions (as in
// forward_cuda), writing NCHW itself (wgmma_ws_nchw_out_fast) or into a channels_last temporary.
// Ask first: nothing is copied for a shape the kernels would refuse.
enum class ViaChannelsLast { kNone, kKernelStrideNchw, kWsNchw, kKernelStrideTemp, kWsTemp };

struct RoutePlan {
  ViaChannelsLast kind = ViaChannelsLast::kNone;
  // kWsNchw only: the ws kernel reads the NCHW input in place (fwd::wgmma_ws_reads_nchw), no copy in.
  bool reads_in_place = false;
};

RoutePlan via_channels_last_plan(const at::Tensor& input, const Geometry& g, const at::Tensor& output) {
  // TF32 or 16-bit only (strict fp32 has its own kernels), on sm_90a, outside forced paths.
  const auto dtype = input.scalar_type();
  const bool tensor_core_dtype = dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
  if (forced_path() != Path::kAuto || !tensor_core_dtype || (dtype == at::kFloat && !allow_tf32_conv()) ||
      !fwd::wgmma_available(input))
    return {};
  if (input.dim() != 4 || !input.is_contiguous() || !output.is_contiguous()) return {};
  const bool ks_nchw = fwd::kernel_stride_plans(g, dtype, true);
  const bool ks = ks_nchw || fwd::kernel_stride_plans(g, dtype, false);
  const bool nchw_out = fwd::wgmma_ws_nchw_out_fast(g, dtype);
  const bool reads_in_place = !ks && fwd::wgmma_ws_reads_nchw(input, g, nchw_out);
  if (!via_channels_last_suitable(g, dtype, ks, ks_nchw, reads_in_place)) return {};
  if (ks_nchw) return {ViaChannelsLast::kKernelStrideNchw};
  if (ks) return {ViaChannelsLast::kKernelStrideTemp};
  if (small_k(g) || g.Cout_g < 32 || !fwd::wgmma_ws_plans(g, dtype, nchw_out)) return {};
  // (reads_in_place is false without an NCHW output: wgmma_ws_reads_nchw.)
  return nchw_out ? RoutePlan{ViaChannelsLast::kWsNchw, reads_in_place} : RoutePlan{ViaChannelsLast::kWsTemp};
}

// input_cl: a channels_last copy of the input that the caller already made (or undefined).
bool launch_via_channels_last(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              const Geometry& g, const at::Tensor& output, const at::Tensor& input_cl) {
  const RoutePlan route = via_channels_last_plan(input, g, output);
  const ViaChannelsLast plan = route.kind;
  if (plan == ViaChannelsLast::kNone) return false;
  CONVT_TRACE("cuda.forward.via_channels_last");
  if (input_cl.defined()) {
    TORCH_CHECK(input_cl.sizes() == input.sizes() && input_cl.scalar_type() == input.scalar_type() &&
                    input_cl.device() == input.device() &&
                    input_cl.is_contiguous(at::MemoryFormat::ChannelsLast),
                "convt: forward_cuda's input_cl is not a channels_last copy of the input");
  }
  // The warp-specialized kernel reads the NCHW input in place where it can (RoutePlan::reads_in_place): no copy.
  const bool in_place = route.reads_in_place && !input_cl.defined();
  const at::Tensor x = input_cl.defined() ? input_cl : in_place ? input : to_channels_last(input);
  if (plan == ViaChannelsLast::kKernelStrideNchw) return fwd::launch_kernel_stride(x, weight, bias, g, output);
  if (plan == ViaChannelsLast::kWsNchw) return fwd::launch_wgmma_ws(x, weight, bias, g, output, in_place);
  const at::Tensor y = at::empty(output.sizes(), output.options().memory_format(at::MemoryFormat::ChannelsLast));
  const bool ran = plan == ViaChannelsLast::kKernelStrideTemp ? fwd::launch_kernel_stride(x, weight, bias, g, y)
                                                              : fwd::launch_wgmma_ws(x, weight, bias, g, y);
  if (!ran) return false;
  nhwc_to_nchw_into(y, output);
  return true;
}

}  // namespace

bool forward_copies_input_to_channels_last_once(const at::Tensor& input, const Geometry& g,
                                                const at::Tensor& output) {
  const RoutePlan route = via_channels_last_plan(input, g, output);
  return route.kind == ViaChannelsLast::kKernelStrideNchw ||
         (route.kind == ViaChannelsLast::kWsNchw && !route.reads_in_place);
}

void forward_cuda(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias, const Geometry& g,
                  const at::Tensor& output, ForwardFamily family, const at::Tensor& input_cl) {
  CONVT_TRACE("cuda.forward");
  const auto dtype = input.scalar_type();
  const bool tensor_core_dtype =
      dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
  const bool tf32_conv = dtype == at::kFloat && allow_tf32_conv();
  const Path forced = forced_path();
  // Every family writes through the output's strides (channels_last included). Writing an
  // NCHW buffer and copying it into a channels_last output was measured slower (kb1_57
  // fp32 19.9 -> 22.8 ms): the copy is a full extra transpose pass.

  // Few multiply-adds per output element into NCHW rows: the store-bound CUDA-core kernel, whose
  // stores write whole sectors and whose blocks share a multiprocessor (forward_store_bound.cu; the
  // tensor-core kernels run such shapes at 3.0-3.3x the write floor, perf-notes-forward).
  if ((forced == Path::kStoreBound && fwd::store_bound_supported(g, output)) ||
      (forced == Path::kAuto && family == ForwardFamily::kAuto && fwd::store_bound_suitable(g, output))) {
    fwd::launch_store_bound(input, weight, bias, g, output);
    return;
  }
  // channels_last kernel == stride on sm_90a: one GEMM whose epilogue writes depth-to-space
  // (forward_kernel_stride.cu), in place of the cuBLAS path's per-row batched GEMMs.
  if (forced == Path::kAuto && family == ForwardFamily::kAuto &&
      fwd::launch_kernel_stride(input, weight, bias, g, output)) {
    return;
  }
  // NCHW through the channels_last kernels, where via_channels_last_plan says so. grad_input's
  // forwards (kImplicitGemm, which keeps them off the cuBLAS family) take it too: its kernels are
  // implicit GEMMs.
  if (launch_via_channels_last(input, weight, bias, g, output, input_cl)) return;
  // The GEMM family calls cuBLAS with the compute type the convolution flag asks for
  // (TF32 or full fp32), so it serves every precision mode.
  const bool want_gemm = forced == Path::kGemm ||
                         (forced == Path::kAuto && family == ForwardFamily::kAuto &&
                          fwd::gemm_col2im_suitable(g, dtype));
  if (want_gemm && fwd::gemm_col2im_supported(g)) {
    fwd::launch_gemm_col2im(input, weight, bias, g, output);
    return;
  }
  const bool fp32_accurate = dtype == at::kFloat && !tf32_conv;
  // wgmma: TF32 (strict fp32 takes its 3xTF32 form below, in front of the mma.sync kernel) and
  // at least 32 output channels per group (its M tile is 64 channels).
  const bool want_wgmma = forced == Path::kWgmma ||
                          (forced == Path::kAuto && !small_k(g) && g.Cout_g >= 32);
  if (tensor_core_dtype && !fp32_accurate && want_wgmma && fwd::wgmma_available(input)) {
    // channels_last input: the warp-specialized kernel where it applies (an NCHW output, from
    // mixed layouts, only where its NCHW epilogue is fast: wgmma_ws_nchw_out_fast).
    if ((fwd::channels_last_dense(output) || fwd::wgmma_ws_nchw_out_fast(g, dtype)) &&
        fwd::launch_wgmma_ws(input, weight, bias, g, output))
      return;
    // Reads NCHW, or channels_last in place where its loads allow (else copies to NCHW).
    if (fwd::launch_wgmma(input, weight, bias, g, output)) return;
  }
  const bool want_igemm = forced == Path::kIgemm || forced == Path::kWgmma ||
                          (forced == Path::kAuto && !small_k(g));
  if (tensor_core_dtype && want_igemm) {
    // Strict float32 on sm_90a: 3xTF32 on wgmma where its tiling fits, else on mma.sync.
    const bool try_3xtf32 = fp32_accurate && want_wgmma && wgmma_3xtf32_allowed() &&
                            (forced == Path::kWgmma || wgmma_3xtf32_suitable(g)) && fwd::wgmma_available(input);
    // The 3xTF32 kernel reads NCHW only; the mma.sync implicit GEMM reads NCHW, or dense
    // channels_last in place (its channels_last form: no transpose pass, which cost ~57 us of
    // kb1_75's ~800 us 16-bit forward). Other strides get one copy (to_nchw).
    const at::Tensor in = try_3xtf32 || !fwd::channels_last_dense(input) ? to_nchw(input) : input;
    if (try_3xtf32 && fwd::launch_wgmma_3xtf32(in, weight, bias, g, output)) return;
    if (fwd::launch_igemm(in, weight, bias, g, output, fp32_accurate)) return;
  }
  if (forced != Path::kDirect && fwd::depthwise_supported(g, output)) {
    fwd::launch_depthwise(input, weight, bias, g, output);
    return;
  }
  fwd::launch_direct(input, weight, bias, g, output);
}

}  // namespace convt
