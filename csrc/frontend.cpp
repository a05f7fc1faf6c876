// See frontend.h. Messages follow PyTorch's own wording where it has one, so
// that a user switching from F.conv_transpose2d sees the same errors.
#include "frontend.h"
#include "host_trace.h"

#include <c10/util/irange.h>

namespace convt {
namespace {

bool is_supported_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

void check_pair(at::IntArrayRef v, const char* name) {
  TORCH_CHECK(v.size() == 2, "conv_transpose2d: expected ", name,
              " to be a single integer value or a list of 2 values, but got ", name, "=", v);
}

void check_tensor_basics(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.layout() == at::kStrided, "conv_transpose2d: expected ", name,
              " to be a dense (strided) tensor, but got layout ", t.layout());
  TORCH_CHECK(is_supported_dtype(t.scalar_type()), "conv_transpose2d: unsupported dtype ",
              t.scalar_type(), " for ", name,
              "; supported dtypes are float32, float64, float16 and bfloat16");
}

}  // namespace

Geometry check_forward_args(const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef output_padding,
                            int64_t groups, at::IntArrayRef dilation) {
  check_tensor_basics(input, "input");
  check_tensor_basics(weight, "weight");
  TORCH_CHECK(input.dim() == 4, "conv_transpose2d: expected 4-D input here, got ", input.sizes());
  TORCH_CHECK(weight.dim() == 4,
              "conv_transpose2d: expected 4-D weight of shape [in_channels, out_channels/groups, "
              "kH, kW], but got weight of size ",
              weight.sizes());
  check_pair(stride, "stride");
  check_pair(padding, "padding");
  check_pair(output_padding, "output_padding");
  check_pair(dilation, "dilation");

  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (",
              input.scalar_type(), ") and weight type (", weight.scalar_type(),
              ") should be the same");
  TORCH_CHECK(input.device() == weight.device(),
              "Expected input and weight to be on the same device, but got input on ",
              input.device(), " and weight on ", weight.device());
  if (bias.has_value() && bias->defined()) {
    check_tensor_basics(*bias, "bias");
    TORCH_CHECK(input.scalar_type() == bias->scalar_type(), "Input type (",
                input.scalar_type(), ") and bias type (", bias->scalar_type(),
                ") should be the same");
    TORCH_CHECK(input.device() == bias->device(),
                "Expected input and bias to be on the same device, but got input on ",
                input.device(), " and bias on ", bias->device());
  }

  TORCH_CHECK(groups > 0, "non-positive groups is not supported");
  for (auto i : c10::irange(2)) {
    TORCH_CHECK(stride[i] > 0, "non-positive stride is not supported");
    TORCH_CHECK(dilation[i] > 0, "dilation should be greater than zero");
    TORCH_CHECK(padding[i] >= 0, "negative padding is not supported");
    TORCH_CHECK(output_padding[i] >= 0, "negative output_padding is not supported");
  }
  TORCH_CHECK((output_padding[0] < stride[0] || output_padding[0] < dilation[0]) &&
                  (output_padding[1] < stride[1] || output_padding[1] < dilation[1]),
              "output padding must be smaller than either stride or dilation, but got "
              "output_padding_height: ",
              output_padding[0], " output_padding_width: ", output_padding[1],
              " stride_height: ", stride[0], " stride_width: ", stride[1],
              " dilation_height: ", dilation[0], " dilation_width: ", dilation[1]);

  TORCH_CHECK(weight.size(0) >= groups, "Given groups=", groups,
              ", expected weight to be at least ", groups,
              " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  TORCH_CHECK(weight.size(0) % groups == 0, "Given groups=", groups,
              ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  TORCH_CHECK(input.size(1) == weight.size(0), "Given transposed=1, weight of size ",
              weight.sizes(), ", expected input", input.sizes(), " to have ", weight.size(0),
              " channels, but got ", input.size(1), " channels instead");
  TORCH_CHECK(weight.numel() > 0, "non-empty 4D weight tensor expected, but got: ", weight.sizes());
  TORCH_CHECK(input.size(0) == 0 || (input.size(2) > 0 && input.size(3) > 0),
              "Only zero batch or zero channel inputs are supported, but got input shape: ",
              input.sizes());
  const int64_t cout = weight.size(1) * groups;
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == cout, "Given transposed=1, weight of size ",
                weight.sizes(), ", expected bias to be 1-dimensional with ", cout,
                " elements, but got bias of size ", bias->sizes(), " instead");
  }

  Geometry g{};
  g.N = input.size(0);
  g.Cin = input.size(1);
  g.Cout = cout;
  g.H = input.size(2);
  g.W = input.size(3);
  g.KH = weight.size(2);
  g.KW = weight.size(3);
  g.SH = stride[0];
  g.SW = stride[1];
  g.PH = padding[0];
  g.PW = padding[1];
  g.DH = dilation[0];
  g.DW = dilation[1];
  g.OPH = output_padding[0];
  g.OPW = output_padding[1];
  g.groups = groups;
  g.Cin_g = g.Cin / groups;
  g.Cout_g = weight.size(1);
  g.Hout = output_extent(g.H, g.KH, g.SH, g.PH, g.DH, g.OPH);
  g.Wout = output_extent(g.W, g.KW, g.SW, g.PW, g.DW, g.OPW);
  TORCH_CHECK(g.Hout > 0 && g.Wout > 0, "Given input size per channel: (", g.H, " x ", g.W,
              "). Calculated output size per channel: (", g.Hout, " x ", g.Wout,
              "). Output size is too small");
  return g;
}

at::MemoryFormat output_memory_format(const at::Tensor& input, const at::Tensor& weight) {
  const bool channels_last = input.suggest_memory_format() == at::MemoryFormat::ChannelsLast ||
                             weight.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
  return channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
}

namespace {

void check_input_dim(const at::Tensor& input) {
  TORCH_CHECK(input.dim() == 3 || input.dim() == 4,
              "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got "
              "input of size: ",
              input.sizes());
}

}  // namespace

at::Tensor conv_transpose2d_frontend(const at::Tensor& input, const at::Tensor& weight,
                                     const std::optional<at::Tensor>& bias,
                                     at::IntArrayRef stride, at::IntArrayRef padding,
                                     at::IntArrayRef output_padding, int64_t groups,
                                     at::IntArrayRef dilation, ForwardKernel kernel) {
  CONVT_TRACE("op.forward");
  check_input_dim(input);
  const bool unbatched = input.dim() == 3;
  const at::Tensor in4 = unbatched ? input.unsqueeze(0) : input;
  const Geometry g =
      check_forward_args(in4, weight, bias, stride, padding, output_padding, groups, dilation);
  at::Tensor out = at::empty({g.N, g.Cout, g.Hout, g.Wout},
                             in4.options().memory_format(output_memory_format(in4, weight)));
  // Non-empty weight and (for N > 0) non-empty input are guaranteed by the
  // checks, so an empty output (N == 0) is the only case without a launch.
  if (out.numel() > 0) {
    CONVT_TRACE("op.forward.kernels");  // the backend's part (op.forward less this: checks, allocation)
    kernel(in4, weight, bias, g, out);
  }
  return unbatched ? out.squeeze(0) : out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv_transpose2d_backward_frontend(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef output_padding,
    int64_t groups, at::IntArrayRef dilation, std::array<bool, 3> output_mask,
    BackwardKernel kernel) {
  CONVT_TRACE("op.backward");
  check_input_dim(input);
  TORCH_CHECK(grad_output.dim() == input.dim(), "conv_transpose2d_backward: grad_output has ",
              grad_output.dim(), " dimensions but input has ", input.dim());
  const bool unbatched = input.dim() == 3;
  const at::Tensor in4 = unbatched ? input.unsqueeze(0) : input;
  const at::Tensor go4 = unbatched ? grad_output.unsqueeze(0) : grad_output;
  const Geometry g = check_forward_args(in4, weight, std::nullopt, stride, padding,
                                        output_padding, groups, dilation);
  check_tensor_basics(grad_output, "grad_output");
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "grad_output type (",
              grad_output.scalar_type(), ") and input type (", input.scalar_type(),
              ") should be the same");
  TORCH_CHECK(grad_output.device() == input.device(),
              "Expected grad_output and input to be on the same device, but got grad_output on ",
              grad_output.device(), " and input on ", input.device());
  const std::array<int64_t, 4> expected{g.N, g.Cout, g.Hout, g.Wout};
  TORCH_CHECK(go4.sizes() == at::IntArrayRef(expected),
              "conv_transpose2d_backward: grad_output has size ", go4.sizes(),
              " but the forward output has size ", at::IntArrayRef(expected));

  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    grad_input = at::empty(in4.sizes(), in4.options().memory_format(output_memory_format(in4, weight)));
  }
  if (output_mask[1]) {
    grad_weight = at::empty(weight.sizes(), weight.options().memory_format(weight.suggest_memory_format()));
  }
  if (output_mask[2]) {
    grad_bias = at::empty({g.Cout}, weight.options());
  }
  if (g.N == 0) {
    // Every gradient is a sum over an empty batch: zero.
    for (at::Tensor* t : {&grad_input, &grad_weight, &grad_bias}) {
      if (t->defined()) t->zero_();
    }
  } else if (output_mask[0] || output_mask[1] || output_mask[2]) {
    CONVT_TRACE("op.backward.kernels");
    kernel(go4, in4, weight, g, grad_input, grad_weight, grad_bias);
  }

  auto or_empty = [&](const at::Tensor& t) { return t.defined() ? t : at::empty({0}, weight.options()); };
  if (unbatched && grad_input.defined()) grad_input = grad_input.squeeze(0);
  return {or_empty(grad_input), or_empty(grad_weight), or_empty(grad_bias)};
}

}  // namespace convt
