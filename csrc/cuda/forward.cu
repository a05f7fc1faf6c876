// Placeholder until the forward kernels land (issue 3).
#include "kernels.h"

namespace convt {
void forward_cuda(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                  const Geometry&, const at::Tensor&) {
  TORCH_CHECK(false, "convt: CUDA forward kernel not implemented yet");
}
}  // namespace convt
