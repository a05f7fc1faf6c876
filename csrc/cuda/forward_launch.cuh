// Internal interface between the forward dispatcher (forward.cu) and the forward
// kernel families (forward_direct.cu, forward_depthwise.cu, forward_igemm.cu, forward_gemm.cu). Not part of the library API.
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "../geometry.h"

namespace convt {
namespace fwd {

// A 4-D channels_last tensor whose channels are contiguous (stride 1): the layout the
// tensor-map kernels read and write in place (forward_wgmma_ws.cu, forward_kernel_stride.cu,
// backward_grad_weight_ws.cu).
inline bool channels_last_dense(const at::Tensor& t) {
  return t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast) && t.stride(1) == 1;
}

// A weight [Cin][Cout_g][KH][KW]'s strides, for the weight-packing kernels (forward_wgmma_ws.cu,
// forward_kernel_stride.cu) that read it in place: a channels_last model's weight needs no
// contiguous copy first (an allocation and a kernel on the host's critical path of small steps).
struct WeightStrides {
  int64_t ci, co, ky, kx;
  explicit WeightStrides(const at::Tensor& w) : ci(w.stride(0)), co(w.stride(1)), ky(w.stride(2)), kx(w.stride(3)) {}
};

// Generic direct kernel: one thread per output pixel and a few output channels,
// gathering over the taps that reach it (phase math, no modulo per tap). Any dtype,
// any strides of input, weight and output. Correctness fallback, and the bandwidth
// kernel for small per-group K (depthwise, few channels per group, sparse phases).
void launch_direct(const at::Tensor& input, const at::Tensor& weight,
                   const std::optional<at::Tensor>& bias, const Geometry& g,
                   const at::Tensor& output);

// Store-bound kernel for few multiply-adds per output element (forward_store_bound.cu): CUDA-core
// fp32 accumulation (fp32-accurate under either TF32 setting), lanes on consecutive output columns so
// that every store writes whole sectors of an NCHW row. float, bfloat16, float16; any strides.
// `store_bound_supported`: it can run; `store_bound_suitable`: forward.cu's rule takes it (NCHW
// output, at most kMaxFmaPerOutput multiply-adds per output element, knob CONVT_FWD_STORE_BOUND).
bool store_bound_supported(const Geometry& g, const at::Tensor& output);
bool store_bound_suitable(const Geometry& g, const at::Tensor& output);
void launch_store_bound(const at::Tensor& input, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const Geometry& g,
                        const at::Tensor& output);

// Depthwise kernel (Cin_g == 1, any channel multiplier): 16-byte vector stores along the
// output's unit-stride axis (width for NCHW, channels for channels_last). See
// forward_depthwise.cu. `depthwise_supported` says whether it can run.
bool depthwise_supported(const Geometry& g, const at::Tensor& output);
void launch_depthwise(const at::Tensor& input, const at::Tensor& weight,
                      const std::optional<at::Tensor>& bias, const Geometry& g,
                      const at::Tensor& output);

// Phase-decomposed implicit GEMM on tensor cores (mma.sync): float (TF32, or 3xTF32
// when `fp32_accurate`), bfloat16, float16; fp32 accumulate. `input` NCHW-contiguous, or
// dense channels_last (read in place where its copies align along channels, else copied to
// NCHW first); output may have any strides. See forward_igemm.cu. Returns false (and
// launches nothing but that copy) when the problem does not fit its tiling (shared memory,
// grid) or the input has other strides.
bool launch_igemm(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias, const Geometry& g,
                  const at::Tensor& output, bool fp32_accurate);

// The same implicit GEMM on Hopper's warpgroup MMA (sm_90a): float in TF32, bfloat16,
// float16. `wgmma_available` says whether this build and the input's device can run it;
// launch_wgmma returns false (launching nothing) when the problem does not fit its tiling.
// Any input strides: channels_last is read in place where its 16-byte loads line up (and
// the output's channels are contiguous), anything else is copied to NCHW first.
// See forward_wgmma.cu.
bool wgmma_available(const at::Tensor& input);
bool launch_wgmma(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias, const Geometry& g,
                  const at::Tensor& output);
// The same kernel for float32 at fp32 accuracy (convolution TF32 off): 3xTF32, each operand
// split into big and small TF32 parts, three MMAs per tap, each chunk's sum added in fp32.
// `input` NCHW-contiguous. Returns false (launching nothing) where it does not apply.
bool launch_wgmma_3xtf32(const at::Tensor& input, const at::Tensor& weight,
                         const std::optional<at::Tensor>& bias, const Geometry& g,
                         const at::Tensor& output);

// Warp-specialized wgmma forward (sm_90a) for channels_last input in bfloat16 / float16 /
// float32 (TF32), one group, 32 bytes of input channels per chunk, Cout a multiple of 8; stride
// 1, or strides up to 4 by phases: a producer warp feeds a ring of tensor-map stages, two
// consumer warpgroups alternate tiles. The output channels_last, or NCHW-contiguous (forward.cu's
// route for NCHW tensors). Returns false (launching nothing) where it does not apply. See
// forward_wgmma_ws.cu.
// allow_nchw_in: an NCHW-contiguous input is read in place too (tensor-map boxes of NCHW rows,
// transposed into the stages by the producer warpgroup; forward.cu's route), where
// wgmma_ws_reads_nchw.
bool launch_wgmma_ws(const at::Tensor& input, const at::Tensor& weight,
                     const std::optional<at::Tensor>& bias, const Geometry& g,
                     const at::Tensor& output, bool allow_nchw_in = false);
// Whether launch_wgmma_ws(allow_nchw_in) reads this NCHW input in place (no channels_last copy
// first): with an NCHW output only (nchw_out; a channels_last one is copied in as before). Knob
// CONVT_FWD_WS_NCHW_IN=0: never.
bool wgmma_ws_reads_nchw(const at::Tensor& input, const Geometry& g, bool nchw_out);
// Whether that kernel has a plan for `g` in `dtype` with an NCHW output or a channels_last one
// (the checks of the geometry and the tile plan; not the tensors' layout, alignment or the
// device): the forward's channels_last route asks before it copies anything (forward.cu).
bool wgmma_ws_plans(const Geometry& g, at::ScalarType dtype, bool nchw_out);
// Whether that kernel writes an NCHW output of `g` in `dtype` about as fast as a channels_last one
// (forward_wgmma_ws.cu, "NCHW output"): at stride 1; where the output stays in L2
// (kWsNchwOutL2Bytes); else with paired column phases (SW == 2, unless the knob
// CONVT_FWD_WS_PAIR=0). Elsewhere one phase per block writes every SW-th element of a sector and
// the rest comes much later: slow above L2 (forward.cu copies a channels_last output back there).
bool wgmma_ws_nchw_out_fast(const Geometry& g, at::ScalarType dtype);

// Kernel == stride (no padding, dilation or output padding) on channels_last input, the output
// channels_last or (kernel width 2) NCHW (sm_90a; bfloat16 / float16, float in TF32; one group):
// one GEMM over flat pixels whose epilogue writes depth-to-space, a run's input kept in shared
// memory across every column tile. Returns false (launching nothing) where it does not apply.
// See forward_kernel_stride.cu.
bool launch_kernel_stride(const at::Tensor& input, const at::Tensor& weight,
                          const std::optional<at::Tensor>& bias, const Geometry& g,
                          const at::Tensor& output);
// Whether that kernel has a plan for `g` in `dtype` with an NCHW output or a channels_last one
// (geometry, dtype and plan checks only), for the forward's channels_last route (forward.cu).
bool kernel_stride_plans(const Geometry& g, at::ScalarType dtype, bool nchw_out);

// The same kernel on an input given as residue subgrids of one channels_last tensor `base`
// (grad_input's planes, backward_grad_input_as_forward.cu, read in place instead of copied):
// input channel ch of the forward `g` is channel ch % C of residue ch / C, and residue r's
// pixel (y, x) is base's element offset + (y + dy) stride_y + (x + dx) stride_x (+ n stride_n),
// zero outside [0, H) x [0, W). No bias. `output` channels_last or NCHW-contiguous. Returns false
// (launching nothing) where it does not apply: the caller copies the planes then.
struct WsResidue {
  int64_t offset;  // elements from base's start to the subgrid's pixel (0, 0), channel 0
  int64_t W, H;    // subgrid size: pixels outside read as zeros
  int64_t dx, dy;  // plane pixel (y, x) is subgrid pixel (y + dy, x + dx)
};
constexpr int kWsMaxResidueMaps = 4;  // tensor maps are 128-byte kernel parameters
struct WsResidueInput {
  int n;                                // residues (at most kWsMaxResidueMaps)
  int64_t C;                            // channels per residue (base's channels)
  int64_t stride_x, stride_y, stride_n; // subgrid strides in elements
  WsResidue r[kWsMaxResidueMaps];
};
bool launch_wgmma_ws_residues(const at::Tensor& base, const WsResidueInput& in, const at::Tensor& weight,
                              const Geometry& g, const at::Tensor& output);

// GEMM (cuBLAS, compute type from the convolution TF32 flag) + deterministic col2im gather: few taps, many input
// channels, small cols workspace. See forward_gemm.cu.
bool gemm_col2im_supported(const Geometry& g);                         // can run
bool gemm_col2im_suitable(const Geometry& g, at::ScalarType dtype);    // heuristic: should
void launch_gemm_col2im(const at::Tensor& input, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const Geometry& g,
                        const at::Tensor& output);

}  // namespace fwd
}  // namespace convt
