// Placeholder until the backward kernels land (issue 3).
#include "kernels.h"

namespace convt {
void backward_cuda(const at::Tensor&, const at::Tensor&, const at::Tensor&, const Geometry&,
                   const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  TORCH_CHECK(false, "convt: CUDA backward kernels not implemented yet");
}
}  // namespace convt
