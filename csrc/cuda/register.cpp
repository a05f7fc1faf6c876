// TORCH_LIBRARY_IMPL(convt, CUDA): device guard + the shared frontend + the
// CUDA kernel families declared in kernels.h.
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../frontend.h"
#include "kernels.h"

namespace convt {
namespace {

at::Tensor conv_transpose2d_cuda(const at::Tensor& input, const at::Tensor& weight,
                                 const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                 at::IntArrayRef padding, at::IntArrayRef output_padding,
                                 int64_t groups, at::IntArrayRef dilation) {
  // Allocate and launch on the input's device even when another one is current.
  const c10::cuda::CUDAGuard guard(input.device());
  return conv_transpose2d_frontend(input, weight, bias, stride, padding, output_padding, groups,
                                   dilation, forward_cuda);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv_transpose2d_backward_cuda(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef output_padding,
    int64_t groups, at::IntArrayRef dilation, std::array<bool, 3> output_mask) {
  const c10::cuda::CUDAGuard guard(input.device());
  return conv_transpose2d_backward_frontend(grad_output, input, weight, stride, padding,
                                            output_padding, groups, dilation, output_mask,
                                            backward_cuda);
}

}  // namespace

TORCH_LIBRARY_IMPL(convt, CUDA, m) {
  m.impl("conv_transpose2d", &conv_transpose2d_cuda);
  m.impl("conv_transpose2d_backward", &conv_transpose2d_backward_cuda);
}

}  // namespace convt
