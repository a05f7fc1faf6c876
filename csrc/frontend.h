// Backend-independent part of both operators: argument validation, unbatched
// (3-D) input, output allocation in the right memory format, empty tensors.
// Each backend (csrc/cpu, csrc/cuda) supplies only the arithmetic on 4-D
// tensors, through the two kernel signatures below.
//
// The fake kernels in convt_op/_fake.py mirror these rules (shapes, strides and
// error messages); tests/test_errors.py and opcheck keep the two in step.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <optional>
#include <tuple>

#include "geometry.h"

namespace convt {

// Validates every argument (shapes, channels, groups, stride/padding/dilation,
// output size, dtype, device, layout) and returns the call's geometry.
// `input` is 4-D here; `bias` may be absent.
Geometry check_forward_args(const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef output_padding,
                            int64_t groups, at::IntArrayRef dilation);

// Memory format of the output and of grad_input: channels_last when the input
// or the weight suggests it (PyTorch's rule for cuDNN and oneDNN), else contiguous.
at::MemoryFormat output_memory_format(const at::Tensor& input, const at::Tensor& weight);

// Writes the transposed convolution of 4-D `input` into `output` (allocated by
// the frontend: [N, Cout, Hout, Wout] in output_memory_format; numel > 0, and
// input.numel() > 0).
using ForwardKernel = void (*)(const at::Tensor& input, const at::Tensor& weight,
                               const std::optional<at::Tensor>& bias, const Geometry& g,
                               const at::Tensor& output);

// Writes the requested gradients. An output not requested is an undefined
// tensor and must be left alone. All tensors are non-empty and 4-D (grad_bias 1-D).
using BackwardKernel = void (*)(const at::Tensor& grad_output, const at::Tensor& input,
                                const at::Tensor& weight, const Geometry& g,
                                const at::Tensor& grad_input, const at::Tensor& grad_weight,
                                const at::Tensor& grad_bias);

at::Tensor conv_transpose2d_frontend(const at::Tensor& input, const at::Tensor& weight,
                                     const std::optional<at::Tensor>& bias,
                                     at::IntArrayRef stride, at::IntArrayRef padding,
                                     at::IntArrayRef output_padding, int64_t groups,
                                     at::IntArrayRef dilation, ForwardKernel kernel);

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv_transpose2d_backward_frontend(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef output_padding,
    int64_t groups, at::IntArrayRef dilation, std::array<bool, 3> output_mask,
    BackwardKernel kernel);

}  // namespace convt
