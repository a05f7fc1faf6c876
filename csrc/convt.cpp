// The operator schemas of the `convt` library, and nothing else.
//
// This is the one place the schemas live. Argument order mirrors
// aten::conv_transpose2d.input so that graph rewrites map arguments 1:1.
// Kernels are registered per backend in csrc/cpu/ and csrc/cuda/, autograd in
// csrc/autograd.cpp; the fake (meta) kernels from Python (convt_op/_fake.py).
#include <torch/library.h>

TORCH_LIBRARY(convt, m) {
  m.def(
      "conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, "
      "SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] output_padding=0, "
      "SymInt groups=1, SymInt[2] dilation=1) -> Tensor");
  // Returns (grad_input, grad_weight, grad_bias). An entry whose output_mask
  // flag is false is returned as an empty tensor of shape [0].
  m.def(
      "conv_transpose2d_backward(Tensor grad_output, Tensor input, Tensor weight, "
      "SymInt[2] stride, SymInt[2] padding, SymInt[2] output_padding, "
      "SymInt groups, SymInt[2] dilation, bool[3] output_mask) "
      "-> (Tensor, Tensor, Tensor)");
}
