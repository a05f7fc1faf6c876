// Entry points of the CUDA kernel families, called from register.cpp through
// the shared frontend (csrc/frontend.h). Each family lives in its own file:
//   forward.cu   conv_transpose2d forward
//   backward.cu  grad_input, grad_weight, grad_bias
// Contract: tensors are on one CUDA device (the current one, guarded by the
// caller), 4-D, non-empty; outputs are preallocated by the frontend; launch
// on at::cuda::getCurrentCUDAStream(), never synchronise the host.
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "../geometry.h"

namespace convt {

// Which kernel families forward_cuda may pick. kImplicitGemm leaves out cuBLAS + col2im
// (grad_input through the forward asks for it: its flattened problems have many channels
// and few taps, which the col2im heuristic would take, and the per-tap column buffers cost
// more there than the implicit GEMM).
enum class ForwardFamily { kAuto, kImplicitGemm };

// input_cl: a channels_last copy of an NCHW input that the caller already made (grad_input's
// forward, whose copy of grad_output also summed grad_bias); used where forward_cuda would make
// that copy itself (forward_copies_input_to_channels_last_once), else ignored.
void forward_cuda(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias, const Geometry& g,
                  const at::Tensor& output, ForwardFamily family,
                  const at::Tensor& input_cl = at::Tensor());
// Whether forward_cuda, for this NCHW input and output, copies the input to channels_last and
// runs a kernel that writes the NCHW output itself (the channels_last route's one-copy form).
bool forward_copies_input_to_channels_last_once(const at::Tensor& input, const Geometry& g,
                                                const at::Tensor& output);
// Every family (the operator's forward; register.cpp takes its address as a ForwardKernel).
inline void forward_cuda(const at::Tensor& input, const at::Tensor& weight,
                         const std::optional<at::Tensor>& bias, const Geometry& g,
                         const at::Tensor& output) {
  forward_cuda(input, weight, bias, g, output, ForwardFamily::kAuto);
}

void backward_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                   const at::Tensor& weight, const Geometry& g, const at::Tensor& grad_input,
                   const at::Tensor& grad_weight, const at::Tensor& grad_bias);

}  // namespace convt
