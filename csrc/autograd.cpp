// Autograd for both operators: torch::autograd::Function kernels registered for the
// Autograd dispatch key, for every backend at once. Calls that record nothing (grad mode off,
// or no argument requiring grad) skip the Function and run the op below autograd.
//
// Why C++ and not torch.library.register_autograd: a Python formula costs every training
// step an autograd.Function around the forward and a Python backward node (with the GIL
// taken on autograd's device thread), about 100-150 us of host time per step. Layers whose
// kernels take less than that (DCGAN's, U-Net's last up-sampling) were host-bound by it
// (docs/perf-notes-backward.md, v14). Here the whole step stays in C++.
//
// Backward of conv_transpose2d goes through convt::conv_transpose2d_backward, asking only
// for the gradients autograd needs. That backward op is itself differentiable (double
// backward), because all three of its outputs are linear in grad_output and bilinear in
// (input, weight):
//
//     grad_input  = conv2d(grad_output, weight)        = backward(go, x, W).gi
//     grad_weight = correlation of input and grad_out  = backward(go, x, W).gw
//     grad_bias   = grad_output summed over N, H, W
//
// so the vector-Jacobian products with (ggi, ggw, ggb) are again our two ops:
//
//     d grad_output = conv_transpose2d(ggi, W) + conv_transpose2d(x, ggw) + ggb
//     d input       = backward(go, x, ggw).gi
//     d weight      = backward(go, ggi, W).gw
//
// The ops are called through the dispatcher, so the backward of a backward is recorded
// again (triple backward and beyond compose the same way), and torch.compile / AOTAutograd
// trace these calls as graph nodes. Sizes and arguments stay SymInt throughout, so dynamic
// shapes trace without guards being forced here.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <array>
#include <initializer_list>
#include <optional>
#include <tuple>
#include <vector>

#include "host_trace.h"

namespace convt {
namespace {

using c10::SymInt;
using c10::SymIntArrayRef;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using ForwardSignature = at::Tensor(const at::Tensor&, const at::Tensor&,
                                    const std::optional<at::Tensor>&, SymIntArrayRef,
                                    SymIntArrayRef, SymIntArrayRef, SymInt, SymIntArrayRef);
using BackwardSignature = std::tuple<at::Tensor, at::Tensor, at::Tensor>(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, SymIntArrayRef, SymIntArrayRef,
    SymIntArrayRef, SymInt, SymIntArrayRef, std::array<bool, 3>);

// The two ops through the dispatcher (the schemas live in convt.cpp). Looked up once.
const c10::TypedOperatorHandle<ForwardSignature>& forward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("convt::conv_transpose2d", "")
                             .typed<ForwardSignature>();
  return op;
}

const c10::TypedOperatorHandle<BackwardSignature>& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("convt::conv_transpose2d_backward", "")
                             .typed<BackwardSignature>();
  return op;
}

// stride, padding, output_padding, groups, dilation: saved in the autograd context (whose
// only storage for non-tensors is an IValue map) and read back for the backward calls.
struct ConvArgs {
  std::vector<SymInt> stride, padding, output_padding, dilation;
  SymInt groups;

  static void save(AutogradContext* ctx, SymIntArrayRef stride, SymIntArrayRef padding,
                   SymIntArrayRef output_padding, const SymInt& groups,
                   SymIntArrayRef dilation) {
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    ctx->saved_data["output_padding"] = output_padding;
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["dilation"] = dilation;
  }

  static ConvArgs load(AutogradContext* ctx) {
    return {ctx->saved_data["stride"].toSymIntVector(),
            ctx->saved_data["padding"].toSymIntVector(),
            ctx->saved_data["output_padding"].toSymIntVector(),
            ctx->saved_data["dilation"].toSymIntVector(), ctx->saved_data["groups"].toSymInt()};
  }

  at::Tensor forward(const at::Tensor& input, const at::Tensor& weight) const {
    return forward_op().call(input, weight, std::nullopt, stride, padding, output_padding, groups,
                             dilation);
  }

  std::tuple<at::Tensor, at::Tensor, at::Tensor> backward(const at::Tensor& grad_output,
                                                          const at::Tensor& input,
                                                          const at::Tensor& weight,
                                                          std::array<bool, 3> mask) const {
    return backward_op().call(grad_output, input, weight, stride, padding, output_padding, groups,
                              dilation, mask);
  }
};

// conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation).
class ConvTranspose2dFunction : public torch::autograd::Function<ConvTranspose2dFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                               SymIntArrayRef stride, SymIntArrayRef padding,
                               SymIntArrayRef output_padding, const SymInt& groups,
                               SymIntArrayRef dilation) {
    CONVT_TRACE("autograd.forward");  // the saves and the op through the dispatcher
    ctx->save_for_backward({input, weight});
    ConvArgs::save(ctx, stride, padding, output_padding, groups, dilation);
    ctx->saved_data["has_bias"] = bias.has_value() && bias->defined();
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {forward_op().call(input, weight, bias, stride, padding, output_padding, groups,
                              dilation)};
  }

  // One gradient per forward argument; non-tensor arguments (and an absent bias) get
  // undefined ones.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    CONVT_TRACE("autograd.backward");
    const bool has_bias = ctx->saved_data["has_bias"].toBool();
    // Autograd's edges are the tensor arguments that are present: input, weight[, bias].
    const std::array<bool, 3> mask = {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                      has_bias && ctx->needs_input_grad(2)};
    variable_list result(8);
    if (!(mask[0] || mask[1] || mask[2]) || !grads[0].defined()) {
      return result;
    }
    const auto saved = ctx->get_saved_variables();
    auto [grad_input, grad_weight, grad_bias] =
        ConvArgs::load(ctx).backward(grads[0], saved[0], saved[1], mask);
    if (mask[0]) result[0] = grad_input;
    if (mask[1]) result[1] = grad_weight;
    if (mask[2]) result[2] = grad_bias;
    return result;
  }
};

// The gradient flowing into one output of the backward op: undefined when the output was
// not computed (an empty [0] placeholder) or nothing flows into it.
at::Tensor usable(const at::Tensor& grad, bool computed) {
  return computed && grad.defined() ? grad : at::Tensor();
}

// conv_transpose2d_backward(grad_output, input, weight, ..., output_mask).
class ConvTranspose2dBackwardFunction
    : public torch::autograd::Function<ConvTranspose2dBackwardFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& grad_output,
                               const at::Tensor& input, const at::Tensor& weight,
                               SymIntArrayRef stride, SymIntArrayRef padding,
                               SymIntArrayRef output_padding, const SymInt& groups,
                               SymIntArrayRef dilation, std::array<bool, 3> output_mask) {
    CONVT_TRACE("autograd.backward_op");  // only where a graph is recorded (create_graph)
    // Unused outputs get undefined gradients instead of materialised zeros: a zero ggi
    // would otherwise cost a whole forward convolution of zeros.
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({grad_output, input, weight});
    ConvArgs::save(ctx, stride, padding, output_padding, groups, dilation);
    ctx->saved_data["output_mask"] =
        std::vector<bool>(output_mask.begin(), output_mask.end());
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [grad_input, grad_weight, grad_bias] =
        backward_op().call(grad_output, input, weight, stride, padding, output_padding, groups,
                           dilation, output_mask);
    return {grad_input, grad_weight, grad_bias};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &grad_output = saved[0], &input = saved[1], &weight = saved[2];
    const auto computed = ctx->saved_data["output_mask"].toBoolList();
    const at::Tensor ggi = usable(grads[0], computed[0]);
    const at::Tensor ggw = usable(grads[1], computed[1]);
    const at::Tensor ggb = usable(grads[2], computed[2]);
    const ConvArgs args = ConvArgs::load(ctx);

    variable_list result(9);
    if (ctx->needs_input_grad(0)) {  // d grad_output: the three terms that are present
      at::Tensor d_go;
      const auto add = [&d_go](const at::Tensor& term) { d_go = d_go.defined() ? d_go.add(term) : term; };
      if (ggi.defined()) add(args.forward(ggi, weight));
      if (ggw.defined()) add(args.forward(input, ggw));
      if (ggb.defined()) {
        const std::vector<int64_t> shape =
            grad_output.dim() == 3 ? std::vector<int64_t>{-1, 1, 1}
                                   : std::vector<int64_t>{1, -1, 1, 1};
        add(ggb.view(shape).expand_as(grad_output));
      }
      result[0] = d_go;
    }
    if (ctx->needs_input_grad(1) && ggw.defined()) {
      result[1] = std::get<0>(args.backward(grad_output, input, ggw, {true, false, false}));
    }
    if (ctx->needs_input_grad(2) && ggi.defined()) {
      result[2] = std::get<1>(args.backward(grad_output, ggi, weight, {false, true, false}));
    }
    return result;
  }
};

// Whether a call records nothing for autograd: grad mode off, or no tensor argument requiring
// grad, and no forward-mode gradient on any (forward AD goes through the Function as before).
// Such a call skips the Function (its node, context, saves and IValue map, ~10-25 us of host
// time per call: the ordinary backward's call of the backward op, every no_grad forward) and
// runs the op below autograd, where Function::apply would do the same without recording.
bool records_nothing(std::initializer_list<const at::Tensor*> tensors) {
  const bool grad_mode = at::GradMode::is_enabled();
  for (const at::Tensor* t : tensors) {
    if (t == nullptr || !t->defined()) continue;
    if (t->_fw_grad(/*level=*/0).defined()) return false;
    if (grad_mode && t->requires_grad()) return false;
  }
  return true;
}

at::Tensor conv_transpose2d_autograd(const at::Tensor& input, const at::Tensor& weight,
                                     const std::optional<at::Tensor>& bias,
                                     SymIntArrayRef stride, SymIntArrayRef padding,
                                     SymIntArrayRef output_padding, SymInt groups,
                                     SymIntArrayRef dilation) {
  if (records_nothing({&input, &weight, bias.has_value() ? &*bias : nullptr})) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return forward_op().call(input, weight, bias, stride, padding, output_padding, groups, dilation);
  }
  return ConvTranspose2dFunction::apply(input, weight, bias, stride, padding, output_padding,
                                        groups, dilation)[0];
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv_transpose2d_backward_autograd(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    SymIntArrayRef stride, SymIntArrayRef padding, SymIntArrayRef output_padding, SymInt groups,
    SymIntArrayRef dilation, std::array<bool, 3> output_mask) {
  if (records_nothing({&grad_output, &input, &weight})) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return backward_op().call(grad_output, input, weight, stride, padding, output_padding, groups,
                              dilation, output_mask);
  }
  auto out = ConvTranspose2dBackwardFunction::apply(grad_output, input, weight, stride, padding,
                                                    output_padding, groups, dilation,
                                                    output_mask);
  return {out[0], out[1], out[2]};
}

}  // namespace

TORCH_LIBRARY_IMPL(convt, Autograd, m) {
  m.impl("conv_transpose2d", TORCH_FN(conv_transpose2d_autograd));
  m.impl("conv_transpose2d_backward", TORCH_FN(conv_transpose2d_backward_autograd));
}

}  // namespace convt
