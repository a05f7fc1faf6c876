// Internal interface between the forward dispatcher (forward.cu) and the forward
// kernel families (forward_direct.cu, forward_depthwise.cu, forward_igemm.cu, forward_gemm.cu). Not part of the library API.
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "../geometry.h"

namespace convt {
namespace fwd {

// Generic direct kernel: one thread per output pixel and a few output channels,
// gathering over the taps that reach it (phase math, no modulo per tap). Any dtype,
// any strides of input, weight and output. Correctness fallback, and the bandwidth
// kernel for small per-group K (depthwise, few channels per group, sparse phases).
void launch_direct(const at::Tensor& input, const at::Tensor& weight,
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
// when `fp32_accurate`), bfloat16, float16; fp32 accumulate. `input` must be
// NCHW-contiguous; output may have any strides. See forward_igemm.cu. Returns false
// (and launches nothing) when the problem does not fit its tiling (shared memory, grid).
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

// Warp-specialized wgmma forward (sm_90a) for bfloat16 / float16 channels_last input and
// output at stride 1, one group, Cin a multiple of 16 and Cout of 8: a producer warp feeds
// a ring of tensor-map stages, two consumer warpgroups alternate tiles. Returns false
// (launching nothing) where it does not apply. See forward_wgmma_ws.cu.
bool launch_wgmma_ws(const at::Tensor& input, const at::Tensor& weight,
                     const std::optional<at::Tensor>& bias, const Geometry& g,
                     const at::Tensor& output);

// GEMM (cuBLAS, compute type from the convolution TF32 flag) + deterministic col2im gather: few taps, many input
// channels, small cols workspace. See forward_gemm.cu.
bool gemm_col2im_supported(const Geometry& g);                         // can run
bool gemm_col2im_suitable(const Geometry& g, at::ScalarType dtype);    // heuristic: should
void launch_gemm_col2im(const at::Tensor& input, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const Geometry& g,
                        const at::Tensor& output);

}  // namespace fwd
}  // namespace convt
