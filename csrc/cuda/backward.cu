// convt::backward_cuda: the CUDA backward of conv_transpose2d. Chooses a kernel
// family per gradient, prepares operand layouts and workspaces, launches on the
// current stream. The kernels live in backward_grad_{input,weight,bias}.cu.
//
// Operand layouts: the backward's own kernels read NCHW-contiguous grad_output / input and
// write their outputs through strides. Channels_last or strided operands are copied to
// NCHW first (one extra read+write of that operand, layout.cu), except where a kernel reads
// channels_last in place: grad_input through the forward kernels
// (backward_grad_input_as_forward.cu), the wgmma and narrow-group grad_weight kernels, the
// depthwise backward (backward_depthwise.cu) and the channels_last columns + cuBLAS
// (backward_s2d_gemm.cu).
//
// Performance notes and measurements: docs/perf-notes-backward.md. Test knobs
// (environment, read once per process, like CONVT_FWD_PATH): CONVT_BWD_PATH=direct|gemm|simt,
// CONVT_BWD_GI=forward|native, CONVT_BWD_GW=wgmma|rows|rows_element|narrow|tile, CONVT_BWD_S2D=on|off,
// CONVT_BWD_DW=off|plane.
//
// Determinism: no atomics anywhere; split reductions have a fixed order.
// Graph capture: no host syncs; workspaces come from the caching allocator on the
// current stream.
#include <ATen/Context.h>

#include <cstdlib>
#include <string>
#include <type_traits>

#include "backward_common.cuh"
#include "env_knob.h"
#include "forward_launch.cuh"
#include "kernels.h"
#include "layout.h"
#include "tf32_flag.h"

namespace convt {
namespace {

using bwd::Mma;
using bwd::Path;

// A test knob's value, "" when unset. Each knob below keeps it in a static: a backward call
// consults several knobs, some more than once, and getenv scans the environment.
std::string env_value(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// Test knob: CONVT_BWD_PATH=direct|gemm forces one kernel family for every gradient;
// "simt" forces the GEMM family on CUDA cores (no tensor cores) for every dtype.
// Read once.
const std::string& path_env() {
  static const std::string value = env_value("CONVT_BWD_PATH");
  return value;
}

std::optional<Path> forced_path() {
  const std::string& env = path_env();
  if (env == "direct") return Path::kDirect;
  if (env == "gemm" || env == "simt") return Path::kGemm;
  return std::nullopt;
}

// float: TF32 when allowed, else 3xTF32 (fp32-accurate); bf16/fp16 always TF32 (exact
// conversion); float64 SIMT (the kernels enforce the last two whatever is passed).
Mma gemm_mode(at::ScalarType dtype) {
  if (path_env() == "simt" || dtype == at::kDouble) return Mma::kSimt;
  if (dtype == at::kFloat) {
    return allow_tf32_conv() ? Mma::kTf32 : Mma::k3xTf32;
  }
  return Mma::kTf32;
}

// Narrow groups leave most of a GEMM tile empty. With tensor cores (float, bf16, fp16) a
// tile a quarter full still beats the direct kernels (measured: kb1_75, Cin/groups = 8);
// on CUDA cores (float64) the GEMM needs 16 channels. Depthwise stays direct.
int64_t min_gemm_channels(at::ScalarType dtype) { return dtype == at::kDouble ? 16 : 8; }

// Test knob CONVT_BWD_GI=forward|native: grad_input through the forward kernels, or the
// backward's own kernels (the heuristic below otherwise). Read once.
const std::string& grad_input_env() {
  static const std::string value = env_value("CONVT_BWD_GI");
  return value;
}

// Test knob CONVT_BWD_SMALL_WS=0: small 16-bit channels_last images keep the columns backward
// (small_images_on_ws never). Read once.
bool small_ws_allowed() {
  static const bool on = !env_equals("CONVT_BWD_SMALL_WS", "0");
  return on;
}

// Small 16-bit channels_last images at least 16 wide (DCGAN's 16 x 16 layer) on the warp-specialized
// kernels, every operand read in place: grad_input as the forward over grad_output's residues,
// grad_weight on 16- or 32-column tiles (backward_grad_weight_ws.cu). "Small" is the images of
// cols_suitable's small-image clause: up to 16 x 16, kernel larger than the stride. There (Cin >= 128,
// Cout >= 64) this replaces the columns backward: an im2col of grad_output (4x its size at k4 s2) and
// two cuBLAS GEMMs. H100 runs AB3 / AB4, dcgan_g4 bf16 channels_last training, device us per step:
// 122 -> 88 (cuDNN 98): grad_weight 20.7 on 16-column tiles (52.5 on 64-column ones), grad_input's
// forward 26, against an im2col of 30.4 and GEMMs of 29.8 and 31.1. With fewer channels (no columns),
// grad_input_path takes the rule too, in place of the native grad_input kernel (not measured on such a
// shape). Narrower images (dcgan_g2's 4 x 4) keep the columns: a 16-column tile would run 3/4 empty.
// At least 32 channels a side (the ws kernels' 64 x 64 tiles).
bool small_images_on_ws(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& grad_input,
                        const Geometry& g) {
  const auto dtype = input.scalar_type();
  if (!small_ws_allowed() || forced_path() || (dtype != at::kHalf && dtype != at::kBFloat16)) return false;
  if (g.groups != 1 || g.W < 16 || g.H * g.W > 16 * 16 || g.KH * g.KW <= g.SH * g.SW || g.Cin < 32 || g.Cout < 32)
    return false;
  if (!bwd::cl_operands(grad_output, input)) return false;
  if (grad_input.defined() && !bwd::grad_input_as_forward_planes_cl(grad_output, grad_input, g)) return false;
  return bwd::grad_weight_ws_supported(input, grad_output, g);
}

// grad_input through the forward kernels, for tensor-core dtypes with enough channels on
// both sides of the forward's GEMM (its output channels are our Cin_g; depthwise stays on
// the direct kernel). Measured on an H100 (docs/perf-notes-backward.md):
//  - stride 1 (grad_output read in place; run V): faster than the backward's own GEMM on
//    every suite shape (fp32 kb1_69 6.90 -> 2.26 ms, kb2_10 9.63 -> 4.07).
//  - stride > 1 (one pass copies grad_output into residue planes; run AP): faster where the
//    native kernel is weakest, 16-bit dtypes (it runs them in TF32 from element loads:
//    bf16 kb2_5 5.14 -> 2.83 ms, kb2_93 2.84 -> 2.09) and narrow channel groups (its
//    32-channel tiles run part empty: kb1_75, Cin_g = 8, fp32 1.30 -> 1.07, bf16 1.49 ->
//    0.73); slower for fp32 with 64 channels (kb2_5 4.14 -> 4.27, kb2_93 2.24 -> 2.60), with
//    padding slots (k3 s2, density 9/16: kb2_2 fp32 2.53 -> 4.33), on small problems where
//    the copy and the weight packing do not pay (DCGAN: 0.17 -> 0.44 ms), and where the
//    flattened kernel is 1 x 1 (kb1_81 bf16 0.22 -> 0.25). Strict fp32 (3xTF32) stays native
//    at stride > 1 (not measured).
//  - 16-bit with padding slots: once the forward staged through cp.async (run AT), bf16
//    kb2_2 (density 9/16) ran 3.25 -> 2.77 ms through the forward (run AX); fp32 keeps 0.8.
bool grad_input_as_forward_suitable(const Geometry& g, at::ScalarType dtype) {
  const bool tensor_core_dtype =
      dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
  if (!tensor_core_dtype || g.Cin_g < 8 || g.Cout_g < 4) return false;
  // (At stride 1 every slot of the flattened kernel is a real tap: no density check.)
  if (g.SH == 1 && g.SW == 1) return true;
  const bwd::AsForwardShape f = bwd::grad_input_as_forward_shape(g);
  const bool sixteen_bit = dtype == at::kHalf || dtype == at::kBFloat16;
  const int64_t grad_output_numel = g.N * g.Cout * g.Hout * g.Wout;
  const double min_density = sixteen_bit ? 0.5 : 0.8;
  return gemm_mode(dtype) == Mma::kTf32 && f.density >= min_density && f.taps > 1 &&
         grad_output_numel >= (int64_t(1) << 24) && (sixteen_bit || g.Cin_g < 32);
}

// Test knob CONVT_BWD_S2D=on|off: the space-to-depth + cuBLAS backward wherever kernel ==
// stride (any dtype and channel count), or never. Read once.
const std::string& s2d_env() {
  static const std::string value = env_value("CONVT_BWD_S2D");
  return value;
}

// grad_input alone (neither grad_weight nor grad_bias asked for: a frozen layer) on kernel == stride layers with
// channels_last operands (16-bit, float32 in TF32) and at most 128 input channels: the ws forward over
// grad_output's residues read in place, not the space-to-depth copy + cuBLAS (s2d_suitable),
// whose copy of grad_output is made to be shared with grad_weight. The forward's tiles hold 64
// input channels each and every tile column reads all of grad_output: ceil(Cin / 64) passes
// over it, against the copy path's three (the copy's read and write, the GEMM's read). H100 run
// AE1, grad_input alone, device ms, bf16 channels_last (fp16 alike), default -> CONVT_BWD_S2D=off
// CONVT_BWD_GI=forward: unet_up1 (Cin 128) 0.335 -> 0.202 (floor 0.134); maskrcnn (Cin 256)
// 0.237 -> 0.368 and unet_up4 (Cin 1024) 0.069 -> 0.230, slower, so the channel bound. With
// grad_bias asked for the copy stays: it sums grad_bias from its loads, where the forward would
// leave grad_bias a pass of its own over grad_output (issue 6: no such pass). Only
// where the residues can be read in place (backward_grad_input_as_forward.cu residues_in_place:
// one tensor map per residue, at most four, with grad_output's pixels whole 16-byte runs);
// elsewhere the forward would copy them into planes, as the space-to-depth path copies, not
// measured. float32 in TF32 splits the same way (H100 run AE2, channels_last, device ms:
// unet_up1 0.665 -> 0.402, floor 0.268; maskrcnn 0.488 -> 0.791, unet_up4 0.142 -> 0.436);
// strict float32 keeps the copy (the ws forward has no 3xTF32 form).
bool grad_input_alone_as_forward(const at::Tensor& grad_output, const at::Tensor& input, const Geometry& g,
                                 bool weight_side_asked) {
  const auto dtype = input.scalar_type();
  const bool tf32 = dtype == at::kFloat && gemm_mode(dtype) == Mma::kTf32;
  if (weight_side_asked || forced_path() || !(dtype == at::kHalf || dtype == at::kBFloat16 || tf32)) return false;
  if (!grad_input_env().empty() || s2d_env() == "on") return false;  // the knobs decide
  // (The residue maps are the warp-specialized forward's: sm_90a builds and devices only.)
  return bwd::s2d_gemm_applies(g) && g.groups == 1 && g.Cin <= 128 && g.SH * g.SW <= fwd::kWsMaxResidueMaps &&
         (g.Cout * input.element_size()) % 16 == 0 && bwd::cl_operands(grad_output, input) &&
         bwd::grad_input_as_forward_shape(g).density > 0 && fwd::wgmma_available(input);
}

// float32 (TF32) channels_last at stride > 1: grad_input as the ws forward over grad_output's residues, read
// in place (backward_grad_input_as_forward.cu residue_maps: one group, at most four residues, 16-byte pixels,
// at least 32 input channels), where grad_input_as_forward_suitable's rule keeps float32 with 32+ channels per
// group native. That rule was measured on NCHW, where the residues are first copied into planes (kb2_5 fp32
// 4.14 -> 4.27 ms, run AP); on channels_last the native GEMM reads an NCHW transpose of grad_output (kb2_2:
// 2.55 ms of GEMM after 1.45 ms of transpose, run AF1), and the forward reads grad_output where it lies.
// H100 run AF1 (session 46), float32 channels_last, device ms, native -> this path: grad_input alone kb2_2
// 4.02 -> 1.36 (floor 0.894, cuDNN 0.891), kb2_5 6.21 -> 1.55 (0.897, 1.265), kb2_93 3.31 -> 0.71 (0.414,
// 0.662); training steps 7.77 -> 6.44, 10.77 -> 7.75, 5.40 -> 3.88. Padding slots too (kb2_2's k3 s2 runs
// 9 taps in 16 slots): the TF32 MMAs have room, the bytes decide. More than one tap per residue (the forward
// over a 1 x 1 kernel was slower where measured, run RE); kernel == stride layers have their own rules
// (s2d_suitable, grad_input_alone_as_forward). (grad_input_residues_read_in_place also requires stride > 1
// and a plan: the channels_last planes it reads in place.)
bool float32_cl_residues_in_place(const at::Tensor& grad_output, const at::Tensor& grad_input, const Geometry& g) {
  if (grad_output.scalar_type() != at::kFloat || gemm_mode(at::kFloat) != Mma::kTf32) return false;
  return bwd::grad_input_as_forward_shape(g).taps > 1 && !bwd::s2d_gemm_applies(g) &&
         bwd::grad_input_residues_read_in_place(grad_output, grad_input, g);
}

Path grad_input_path(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& grad_input,
                     const Geometry& g, bool weight_side_asked) {
  if (auto f = forced_path()) return *f;
  const at::ScalarType dtype = grad_output.scalar_type();
  const std::string& gi = grad_input_env();
  if (gi == "forward" && bwd::grad_input_as_forward_shape(g).density > 0) return Path::kAsForward;
  if (grad_input_alone_as_forward(grad_output, input, g, weight_side_asked)) return Path::kAsForward;
  if (gi != "native" && grad_input_as_forward_suitable(g, dtype)) return Path::kAsForward;
  if (gi != "native" && float32_cl_residues_in_place(grad_output, grad_input, g)) return Path::kAsForward;
  // Small 16-bit channels_last images: grad_output's residues read in place, no copy to pay for.
  if (gi != "native" && bwd::grad_input_as_forward_shape(g).density > 0 &&
      small_images_on_ws(grad_output, input, grad_input, g))
    return Path::kAsForward;
  // float32 NCHW that the rule above keeps native, but which one channels_last copy of
  // grad_output serves (kernel a multiple of the stride, not equal to it: see
  // nchw_via_channels_last).
  if (gi != "native" && dtype == at::kFloat && bwd::grad_input_nchw_via_channels_last(grad_output, grad_input, g))
    return Path::kAsForward;
  return (g.Cin_g >= min_gemm_channels(dtype) && g.Cout_g * g.KH * g.KW >= 16) ? Path::kGemm
                                                                                 : Path::kDirect;
}

Path grad_weight_path(const Geometry& g, at::ScalarType dtype) {
  if (auto f = forced_path()) return *f;
  const int64_t c = min_gemm_channels(dtype);
  return (g.Cin_g >= c && g.Cout_g >= c) ? Path::kGemm : Path::kDirect;
}

// Test knob CONVT_BWD_GW=wgmma|rows|rows_element|narrow|tile: grad_weight on the wgmma kernel
// wherever it runs, on the rows kernels wherever they run (any channel count; rows_element:
// never the async variant), on the narrow-group kernel wherever it runs, or on the tile
// kernel (the heuristics below otherwise). Read once.
const std::string& grad_weight_env() {
  static const std::string value = env_value("CONVT_BWD_GW");
  return value;
}

// The rows kernels (backward_grad_weight_rows.cu) stage a 32-column segment of an input row
// once for all taps of a kernel row; rows narrower than that leave the segment partly empty
// (W = 16: half), so narrow images keep the tile kernel, as do narrow channel groups (the
// rows kernels' tiles are 32 or 64 channels on each side). TF32 / 16-bit MMAs only: 3xTF32
// and float64 stay on the tile kernel. Measured on an H100 (docs/perf-notes-backward.md,
// runs AB-AJ): faster than the tile kernel on every suite shape it takes (fp32 kb1_57 10.2 ->
// 5.0 ms, bf16 16.6 -> 3.7) except fp32 with >= 256 channels on both sides (unet_up4: 0.50
// against 0.43 ms), where the tile kernel's 128 x 128 tiles re-read less.
bool grad_weight_rows_suitable(const Geometry& g, at::ScalarType dtype, Mma mode, Path path) {
  if (mode != Mma::kTf32 || !bwd::grad_weight_rows_supported(g)) return false;
  const std::string& gw = grad_weight_env();
  if (gw == "rows" || gw == "rows_element") return true;
  if (gw == "tile" || gw == "narrow" || forced_path() || path != Path::kGemm) return false;
  if (dtype == at::kFloat && g.Cin_g >= 256 && g.Cout_g >= 256) return false;
  return g.W >= 24 && g.Cin_g >= 16 && g.Cout_g >= 16;
}

// grad_weight on the wgmma kernels (backward_grad_weight_wgmma.cu) where they run (bf16 /
// fp16 on sm_90a, stride 1 or 2 along the width; NCHW with aligned rows, or channels_last
// read in place; float with TF32, NCHW, stride 1 along the width, by default tap groups of 4
// or where its ring kernel runs: bwd::grad_weight_wgmma_supported) and the rows kernels would
// otherwise take the problem, except where both channel groups have at most 32 channels:
// there the rows kernels' 32 x 32 tiles run full and the wgmma kernel's 64 x 64 ones a
// quarter full. Measured on an H100 (bf16, run BB, against the rows kernels): kb1_57 3.74
// -> 2.75 ms, kb1_65 2.81 -> 1.33, kb1_69 3.80 -> 2.20, kb2_10 3.83 -> 2.78; 32 channels:
// kb1_71 0.98 against 1.06, kb1_78 1.93 against 1.86 (a tie). channels_last operands take
// it at 32 channels too: the rows kernels would first copy both to NCHW (kb1_71 bf16: two
// nhwc_to_nchw copies, 0.87 ms, against a grad_weight of about 1 ms; run CH). Measured
// (H100, run CL): kb1_71 bf16 channels_last step 3.62 -> 2.89 ms, kb1_78 5.07 -> 4.14. Knob
// CONVT_BWD_GW=wgmma: wherever it runs; rows / rows_element / tile: never.
bool grad_weight_wgmma_suitable(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                                bool rows) {
  const std::string& gw = grad_weight_env();
  if (!bwd::grad_weight_wgmma_supported(x, go, g)) return false;
  if (gw == "wgmma") return true;
  const bool read_in_place = !x.is_contiguous();  // supported + not contiguous: channels_last
  if (!gw.empty()) return false;
  // 16-bit channels_last operands of images too narrow for the rows kernels (W < 24) on the
  // warp-specialized kernel, read in place (its 16- and 32-column tiles), not on the NCHW tile
  // kernel behind two transposes. At least 32 channels a side: the kernel's tiles are 64 x 64.
  if (!rows) {
    return read_in_place && !forced_path() && g.Cin_g >= 32 && g.Cout_g >= 32 && bwd::grad_weight_ws_supported(x, go, g);
  }
  return g.Cin_g > 32 || g.Cout_g > 32 || read_in_place;
}

// Narrow channel groups (at most 16 input and 32 output channels per group) on their own
// phase-decomposed kernel (backward_grad_weight_narrow.cu) where the tile kernel would
// otherwise run: its 32 x 128 tiles are mostly empty there and it gathers grad_output
// through the stride per tap. Knob CONVT_BWD_GW=narrow: wherever it runs; tile / rows /
// rows_element / wgmma: never.
bool grad_weight_narrow_suitable(const Geometry& g, at::ScalarType dtype, Mma mode, Path path) {
  if (mode != Mma::kTf32 || !bwd::grad_weight_narrow_supported(g, dtype)) return false;
  const std::string& gw = grad_weight_env();
  if (gw == "narrow") return true;
  return gw.empty() && !forced_path() && path == Path::kGemm;
}

// Kernel == stride (U-Net / Mask R-CNN upsampling): grad_input and grad_weight as cuBLAS
// GEMMs over grad_output rearranged space-to-depth (backward_s2d_gemm.cu), for tensor-core
// dtypes with channel counts that fill cuBLAS's tiles. Measured on an H100 (run AN, forward +
// backward, against the backward's own kernels): unet_up4 fp32 1.17 -> 0.62 ms, bf16 1.57 ->
// 0.44; maskrcnn fp32 2.90 -> 2.64, bf16 3.66 -> 1.86; unet_up1 (256 x 256 images) bf16 2.56
// -> 2.14 but fp32 2.58 -> 2.78 (the rearranging copies of a 537 MB grad_output and the input
// cost more than the fp32 kernels lose on large images), so fp32 took it for images up to
// 64 x 64 only. Since the paired rearrangement runs at copy speed and sums grad_bias from its
// loads (v35), TF32 gains on large images too: unet_up1 fp32 training 2242 -> 1890 us of device
// time (run UH, CONVT_BWD_S2D=on against the rule); strict float32 (cuBLAS in full fp32 against
// the 3xTF32 kernels, not measured) keeps the 64 x 64 limit. The TF32 gain comes from grad_input
// and grad_weight sharing the rearranged grad_output: for grad_weight alone the rows kernel is
// faster on large images (unet_up1 float32 grad_weight alone: 0.496 ms before UH's rule, 0.875
// after, run VO), so there it needs grad_input asked for too. Operands both channels_last take
// the channels_last variant (no input copy, grad_output rearranged by whole runs, grad_input
// written channels_last; any image size);
// other non-NCHW layouts stay on the backward's own kernels (the NCHW variant gathering
// across channels with output copies: unet_up1 fp32 3.9 -> 8.2 ms).
bool s2d_suitable(const Geometry& g, at::ScalarType dtype, bool not_nchw, bool cl, bool grad_input_asked) {
  if (!bwd::s2d_gemm_applies(g)) return false;
  const std::string& env = s2d_env();
  if (env == "on") return true;
  if (env == "off" || forced_path() || (not_nchw && !cl)) return false;
  const bool tensor_core_dtype =
      dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
  const bool small_images = g.H * g.W <= 64 * 64;
  const bool tf32 = dtype == at::kFloat && gemm_mode(dtype) == Mma::kTf32;
  return tensor_core_dtype && g.Cin >= 64 && g.Cout >= 32 &&
         (cl || small_images || dtype != at::kFloat || (tf32 && grad_input_asked));
}

// Test knob CONVT_BWD_COLS=on|off: grad_output's columns + cuBLAS (backward_s2d_gemm.cu)
// for every groups-1 layer (any dtype, layout and size), or never. Read once.
const std::string& cols_env() {
  static const std::string value = env_value("CONVT_BWD_COLS");
  return value;
}

// Small images with many channels (DCGAN's layers): both gradients as cuBLAS GEMMs over
// grad_output's columns (im2col), where the implicit-GEMM kernels' pixel tiles run mostly
// empty. Measured (H100 run BV, fp32, backward kernels per step): dcgan_g2 (4 x 4 images)
// 0.318 -> 0.12 ms; dcgan_g4 (16 x 16) 0.273 -> 0.29, where writing the 4x larger columns
// (0.14 ms) cost what the GEMMs saved. 16-bit dtypes up to 16 x 16: their implicit-GEMM
// kernels are slower there (run CA, dcgan_g4 bf16: 0.42 -> 0.215 ms NCHW, 0.49 -> 0.35
// channels_last). Since the columns are written in 16-byte vectors (FI) and the input
// transposed by layout.cu's swap (IF), TF32 gains at 16 x 16 too (run IG, dcgan_g4 forward +
// backward: NCHW 0.413 -> 0.356 ms, channels_last 0.507 -> 0.448); strict float32 (cuBLAS
// in full fp32 against the 3xTF32 kernels, not measured) keeps 8 x 8. The columns are
// KH*KW / (SH*SW) times grad_output (4x for k4 s2), at most 64 M elements; tensor-core
// dtypes; kernel == stride layers keep the space-to-depth rule above (its knob included).
// Any layout (channels_last operands take the channels_last columns: cl), except the small 16-bit
// channels_last images that small_images_on_ws sends to the warp-specialized kernels (small_ws(),
// asked last: it plans the ws grad_weight).
//
// With channels_last operands, also every layer with sparse taps, KH*KW <= SH*SW: the
// columns are then no bigger than grad_output (kb1_81, kernel 3 at stride 5: 9 of every 25
// grad_output pixels are read at all, the columns 0.36x grad_output), gathered in whole
// channel runs, where the backward's own kernels would first transpose all of grad_output
// to NCHW (kb1_81 bf16: 0.41 ms of transposes and 0.44 ms of tile kernels; run IC).
template <typename SmallWs>
bool cols_suitable(const Geometry& g, at::ScalarType dtype, bool cl, const SmallWs& small_ws) {
  if (!bwd::cols_gemm_applies(g)) return false;
  const std::string& env = cols_env();
  if (env == "on") return true;
  if (env == "off" || forced_path() || bwd::s2d_gemm_applies(g)) return false;
  const bool tensor_core_dtype =
      dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
  if (cl && tensor_core_dtype && g.KH * g.KW <= g.SH * g.SW) return true;
  const int64_t cols = g.Cout * g.KH * g.KW * g.N * g.H * g.W;
  const bool sixteen_bit = dtype == at::kHalf || dtype == at::kBFloat16;
  const bool tf32 = dtype == at::kFloat && gemm_mode(dtype) == Mma::kTf32;
  const int64_t max_pixels = sixteen_bit || tf32 ? 16 * 16 : 8 * 8;
  return tensor_core_dtype && g.Cin >= 128 && g.Cout >= 64 && g.H * g.W <= max_pixels &&
         cols <= (int64_t(1) << 26) && !small_ws();
}

at::Tensor nchw(const at::Tensor& t) { return bwd::to_nchw(t); }

// Knob CONVT_BWD_BIAS_FUSED=0: grad_bias always by a pass of its own (grad_bias_sum), for A/B
// measurements and tests; unset: inside the pass that already reads grad_output where one does.
// Read once.
KnobMode bias_fused_mode() {
  static const KnobMode mode = env_mode("CONVT_BWD_BIAS_FUSED");
  return mode;
}

// Stride 1 of grad_weight_nchw_via_channels_last's rule: whether the channels_last kernel saves more
// than the two copies cost. Per output pixel the copies move (Cin + Cout) elements each way and
// the kernel does Cin * Cout * KH * KW MACs, so the test is on m = Cin * Cout * KH * KW / (Cin + Cout)
// against the break-even of the measured rates (H100 run AK2, bf16 grad_weight alone, device ms,
// NCHW kernel -> copies + ws kernel). Where a channel group has more than 32 channels the NCHW side
// runs the wgmma kernel (~150-170 TMAC/s against the ws kernel's ~330, copies at ~2.9 TB/s):
// break-even m ~470. Measured: kb1_65 (64 x 64, 3 x 7, m 672) 1.355 -> 0.931, kb1_69 (64 x 128,
// 3 x 5, m 640) 1.777 -> 1.232; kb1_57 and kb2_10 (64 x 64, 3 x 3, m 288) 1.892 -> 2.431 and 1.785
// -> 2.318, slower. With 32 channels or fewer it runs the rows kernel (~40 TMAC/s against ~94):
// break-even m ~100. Measured: kb1_71 (32 x 32, 3 x 3, m 144) 0.976 -> 0.775, kb1_78 (32 x 32,
// 3 x 7, m 336) 1.932 -> 1.394. (Where the NCHW wgmma kernel does not run, the rows kernel does, and
// the higher threshold only errs toward not copying.)
bool stride1_copies_pay(const Geometry& g) {
  const int64_t macs_per_copied = g.Cin * g.Cout * g.KH * g.KW / (g.Cin + g.Cout);
  return macs_per_copied >= (g.Cin > 32 || g.Cout > 32 ? 480 : 100);
}

// NCHW 16-bit grad_weight through the warp-specialized channels_last kernel
// (backward_grad_weight_ws.cu) on channels_last copies of grad_output (the one grad_input's
// residues read, where they do: made once for both) and of the input (a quarter of grad_output's
// elements at stride 2). Why: the NCHW kernels are far from their floor there, the ws kernel near
// it (bf16 grad_weight alone, ms: NCHW kb2_5 2.537, kb2_93 0.783, kb2_2 1.112, run RG; channels_last
// ws kb2_5 0.530, kb2_93 0.247, kb2_2 0.582, runs LJ / MA), and the input's copy costs ~0.17 ms
// on kb2_5 / kb2_2 (run RB). H100 run SA, bf16 NCHW training device us per step (knob 0 -> this):
// kb2_5 6601 -> 4747 (predicted ~4800), kb2_93 2642 -> 2156, kb2_2 4490 -> 4138. At stride 1 both
// copies are whole tensors, so it pays only with enough MACs per copied element
// (stride1_copies_pay; run AK2, bf16 NCHW training ms: kb1_65 2.96 -> 2.61, kb1_69 4.08 -> 3.63,
// kb1_71 1.91 -> 1.71, kb1_78 3.26 -> 2.74). Rule: 16-bit, one group, grad_output of 2^24+
// elements (at stride > 1, where grad_input takes its residues; at stride 1 no measurement below
// it), stride > 1 or stride1_copies_pay, the ws kernel planning. Knob CONVT_BWD_GW_VIA_CL: 0 never;
// all at any size and stride (measuring). Read once.
bool grad_weight_nchw_via_channels_last(const at::Tensor& grad_output, const at::Tensor& input, const Geometry& g) {
  static const KnobMode mode = env_mode("CONVT_BWD_GW_VIA_CL");
  if (mode == KnobMode::kNever || !grad_weight_env().empty() || forced_path()) return false;
  const auto dtype = input.scalar_type();
  if (dtype != at::kBFloat16 && dtype != at::kHalf) return false;
  if (input.dim() != 4 || !input.is_contiguous() || !grad_output.is_contiguous()) return false;
  if (mode == KnobMode::kRule) {
    if (g.N * g.Cout * g.Hout * g.Wout < (int64_t(1) << 24)) return false;
    if (g.SH == 1 && g.SW == 1 && !stride1_copies_pay(g)) return false;
  }
  return bwd::grad_weight_ws_plans(g, input);
}

}  // namespace

void backward_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                   const at::Tensor& weight, const Geometry& g, const at::Tensor& grad_input,
                   const at::Tensor& grad_weight, const at::Tensor& grad_bias) {
  CONVT_TRACE("cuda.backward");
  // The backward's own kernels read NCHW; the forward kernels read any layout.
  at::Tensor go_nchw;
  const auto go = [&]() -> const at::Tensor& {
    if (!go_nchw.defined()) go_nchw = nchw(grad_output);
    return go_nchw;
  };

  // grad_bias reads channels_last grad_output in place unless an NCHW copy exists anyway.
  const auto bias_go = [&]() -> const at::Tensor& {
    return go_nchw.defined() || !bwd::channels_last_only(grad_output) ? go() : grad_output;
  };
  // grad_bias for the passes that sum it from their own loads (the copies of grad_output, the ws
  // grad_weight kernel); undefined under CONVT_BWD_BIAS_FUSED=0, which leaves it to
  // grad_bias_sum. (The depthwise kernels take grad_bias itself: the knob does not apply there.)
  const at::Tensor bias_to_fuse = bias_fused_mode() == KnobMode::kNever ? at::Tensor() : grad_bias;

  // Depthwise (one input and one output channel per group): both gradients in one pass
  // over grad_output, every operand read in place (backward_depthwise.cu), and grad_bias with
  // them where every grad_output element is reached by a tap. Measured on an H100:
  // docs/perf-notes-backward.md, v17 and v34.
  if ((grad_input.defined() || grad_weight.defined()) && !forced_path() &&
      bwd::depthwise_backward_supported(grad_output, input, grad_input, g)) {
    // grad_bias in the same pass where the taps reach every grad_output element.
    const bool bias_done =
        bwd::depthwise_backward(grad_output, input, weight, g, grad_input, grad_weight, grad_bias);
    if (grad_bias.defined() && !bias_done) bwd::grad_bias_sum(bias_go(), g, grad_bias);
    return;
  }

  // Both gradients through cuBLAS over grad_output's columns: kernel == stride layers
  // (space-to-depth), small images or (channels_last) sparse taps (im2col); channels_last
  // operands in place.
  const bool not_nchw = !grad_output.is_contiguous() || !input.is_contiguous();
  const bool cl_operands = bwd::cl_operands(grad_output, input);
  const bool s2d = s2d_suitable(g, grad_output.scalar_type(), not_nchw, cl_operands, grad_input.defined()) &&
                   !grad_input_alone_as_forward(grad_output, input, g, grad_weight.defined() || grad_bias.defined());
  if ((grad_input.defined() || grad_weight.defined()) &&
      (s2d || cols_suitable(g, grad_output.scalar_type(), cl_operands,
                            [&] { return small_images_on_ws(grad_output, input, grad_input, g); }))) {
    bool bias_done = false;
    if (cl_operands) {
      // grad_bias from the columns copy's loads where it can (backward_s2d_gemm.cu).
      bias_done = bwd::cols_gemm_backward_cl(grad_output, input, weight, g, grad_input, grad_weight, bias_to_fuse);
    } else {
      // grad_bias from the space-to-depth copy's loads where it can (backward_s2d_gemm.cu).
      bias_done = bwd::cols_gemm_backward(grad_output, input, weight, g, grad_input, grad_weight, bias_to_fuse);
    }
    if (grad_bias.defined() && !bias_done) bwd::grad_bias_sum(bias_go(), g, grad_bias);
    return;
  }

  // A channels_last copy of an NCHW grad_output, shared by grad_input's residues and grad_weight
  // (grad_weight_nchw_via_channels_last). Where grad_bias is asked for, the copy also sums each
  // channel from the values it loads (layout.cu), so grad_bias needs no pass of its own over
  // grad_output (H100, float32 training: kb2_5's grad_bias pass was 810 us, kb2_93's 412; v35).
  at::Tensor go_cl;
  bool bias_done = false;
  const auto make_go_cl = [&] {
    if (!bias_to_fuse.defined()) {
      go_cl = to_channels_last(grad_output);
      return;
    }
    ChannelsLastWithSums c = to_channels_last_with_channel_sums(grad_output);
    go_cl = std::move(c.out);
    if (c.sums.defined()) {
      bwd::grad_bias_reduce(c.sums, g, c.splits, grad_bias);
      bias_done = true;
    }
  };
  const bool gw_via_cl = grad_weight.defined() && grad_weight_nchw_via_channels_last(grad_output, input, g);

  if (grad_input.defined()) {
    CONVT_TRACE("cuda.backward.grad_input");
    const Path path = grad_input_path(grad_output, input, grad_input, g, grad_weight.defined() || grad_bias.defined());
    if (path == Path::kAsForward) {
      // The NCHW plane copy reads grad_output as NCHW: hand it the NCHW copy that grad_weight
      // and grad_bias share, so a channels_last grad_output is transposed once, not twice.
      // (At stride 1 the forward reads grad_output in place, any layout; the channels_last
      // plane copy reads it in place too.)
      const bool copies = bwd::grad_input_as_forward_shape(g).copies_planes &&
                          !bwd::grad_input_as_forward_planes_cl(grad_output, grad_input, g);
      if ((gw_via_cl || grad_bias.defined()) && bwd::grad_input_nchw_via_channels_last(grad_output, grad_input, g)) {
        make_go_cl();
      } else if (bias_to_fuse.defined() && bwd::grad_input_forward_copies_grad_output(grad_output, grad_input, g)) {
        // Stride 1: the forward would copy grad_output to channels_last itself; this copy sums
        // grad_bias too (bf16 NCHW kb2_10: a 418 us pass of its own, run UN).
        make_go_cl();
      }
      bwd::grad_input_as_forward(copies ? go() : grad_output, weight, g, grad_input, go_cl);
    } else if (path == Path::kGemm) {
      // [Cin, Cout_g, KH, KW] -> [groups, KH*KW, Cout_g, Cin_g]: the GEMM's B operand
      // with input channels contiguous (coalesced tile loads). Small: weight-sized.
      const at::Tensor wt = weight.reshape({g.groups, g.Cin_g, g.Cout_g, g.KH * g.KW})
                                .permute({0, 3, 2, 1})
                                .contiguous();
      bwd::grad_input_gemm(go(), wt, g, grad_input, gemm_mode(grad_output.scalar_type()));
    } else {
      bwd::grad_input_direct(go(), nchw(weight), g, grad_input);
    }
  }

  if (grad_weight.defined()) {
    CONVT_TRACE("cuda.backward.grad_weight");
    const Path path = grad_weight_path(g, input.scalar_type());
    const Mma mode = gemm_mode(input.scalar_type());
    const bool rows = grad_weight_rows_suitable(g, input.scalar_type(), mode, path);
    const bool narrow = !rows && grad_weight_env() != "wgmma" &&
                        grad_weight_narrow_suitable(g, input.scalar_type(), mode, path);
    // The wgmma and narrow-group kernels read channels_last operands in place (the narrow one
    // takes an NCHW copy of grad_output that grad_input already made); every other grad_weight
    // kernel reads NCHW copies.
    const auto channels_last = [](const at::Tensor& t) {
      return t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast);
    };
    // NCHW operands through channels_last copies (grad_weight_nchw_via_channels_last): only where
    // the ws kernel then takes them (the other kernels below read NCHW).
    at::Tensor x_cl;
    bool via_cl = false;
    if (gw_via_cl) {
      if (!go_cl.defined()) make_go_cl();
      x_cl = to_channels_last(input);
      via_cl = bwd::grad_weight_ws_supported(x_cl, go_cl, g);
    }
    // float32 (TF32) channels_last operands where the rows kernels would run: the channels_last
    // rows kernel reads them in place (backward_grad_weight_rows_cl.cu), no NCHW copies (these
    // cost kb2_2 1.85 ms of a 3.76 ms grad_weight, H100 run AE6), also where the TF32 ring kernel
    // would run behind those copies (tap groups of 4). H100 run AH1, grad_weight alone, device ms, against
    // CONVT_BWD_GW_ROWS_CL=0 in the same run: kb2_2 3.739 -> 1.262, kb2_5 4.656 -> 2.146, kb2_93
    // 2.333 -> 1.195, kb1_57 6.993 -> 4.271, kb2_10 6.821 -> 4.447, kb1_65 (the ring) 3.326 -> 2.685.
    const bool rows_cl = rows && !via_cl && (grad_weight_env().empty() || grad_weight_env() == "rows") &&
                         bwd::grad_weight_rows_cl_supported(input, grad_output, g);
    const bool in_place = !rows_cl && !via_cl && !narrow && !input.is_contiguous() &&
                          grad_weight_wgmma_suitable(input, grad_output, g, rows);
    const at::Tensor x = via_cl ? x_cl : rows_cl || in_place || (narrow && channels_last(input)) ? input : nchw(input);
    const at::Tensor gout = via_cl ? go_cl
                            : rows_cl || in_place || (narrow && !go_nchw.defined() && channels_last(grad_output))
                                ? grad_output
                                : go();
    const bool wgmma = !rows_cl && !via_cl && !narrow && (in_place || grad_weight_wgmma_suitable(x, gout, g, rows));
    // The warp-specialized kernel (backward_grad_weight_ws.cu) where the channels_last ring
    // kernel would run and it applies: 16-bit, one group, at most 4 residue subgrids of
    // grad_output holding taps (stride 1, or 2 per dimension). H100 runs LD / LI: bf16 kb1_57
    // 1.658 -> 1.020 ms, kb1_69 1.604 -> 0.762 against the ring kernel. CONVT_BWD_GW_WS=0: off.
    const bool gw_ws = via_cl || (in_place && grad_weight_env().empty() && bwd::grad_weight_ws_supported(x, gout, g));
    const bool gemm = path == Path::kGemm;
    const int64_t splits = gw_ws    ? bwd::grad_weight_ws_splits(g)
                           : wgmma  ? bwd::grad_weight_wgmma_splits(x, gout, g)
                           : rows   ? bwd::grad_weight_rows_splits(g)
                           : narrow ? bwd::grad_weight_narrow_splits(g, input.scalar_type())
                           : gemm   ? bwd::grad_weight_gemm_splits(g)
                                    : bwd::grad_weight_direct_splits(g);
    const auto acc_type = input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    const at::Tensor ws =
        at::empty({splits * g.KH * g.KW * g.Cin * g.Cout_g}, input.options().dtype(acc_type));
    // grad_bias not yet summed by a copy of grad_output: the ws kernel (its grad_output stages),
    // the TF32 ring and the float32 rows kernels (their staged grad_output rows) sum it where
    // they cover grad_output, and say whether they did.
    const at::Tensor bias_left = bias_done ? at::Tensor() : bias_to_fuse;
    if (gw_ws) {
      bias_done = bwd::grad_weight_ws(x, gout, g, splits, ws, bias_left) || bias_done;
    } else if (rows_cl) {
      bias_done = bwd::grad_weight_rows_cl(x, gout, g, splits, ws, bias_left) || bias_done;
    } else if (wgmma) {
      bias_done = bwd::grad_weight_wgmma(x, gout, g, splits, ws, bias_left) || bias_done;
    } else if (narrow) {
      bwd::grad_weight_narrow(x, gout, g, splits, ws);
    } else if (rows) {
      bias_done = bwd::grad_weight_rows(x, gout, g, splits, ws, grad_weight_env() != "rows_element", bias_left) ||
                  bias_done;
    } else if (gemm) {
      bwd::grad_weight_gemm(x, gout, g, splits, ws, mode);
    } else {
      bwd::grad_weight_direct(x, gout, g, splits, ws);
    }
    bwd::grad_weight_reduce(ws, g, splits, grad_weight);
  }

  if (grad_bias.defined() && !bias_done) {
    bwd::grad_bias_sum(bias_go(), g, grad_bias);
  }
}

}  // namespace convt
