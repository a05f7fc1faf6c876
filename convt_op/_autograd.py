"""Autograd for both operators, registered with torch.library.register_autograd.

Backward of conv_transpose2d goes through convt::conv_transpose2d_backward,
asking only for the gradients autograd needs. That backward op is itself
differentiable (double backward), because all three of its outputs are linear
in grad_output and bilinear in (input, weight):

    grad_input  = conv2d(grad_output, weight)        = backward(go, x, W).gi
    grad_weight = correlation of input and grad_out  = backward(go, x, W).gw
    grad_bias   = grad_output summed over N, H, W

so the vector-Jacobian products with (ggi, ggw, ggb) are again our two ops:

    d grad_output = conv_transpose2d(ggi, W) + conv_transpose2d(x, ggw) + ggb
    d input       = backward(go, x, ggw).gi
    d weight      = backward(go, ggi, W).gw
"""

from __future__ import annotations

import torch

from ._fake import as_pair


def _needs_grad(ctx, count: int) -> list[bool]:
    """ctx.needs_input_grad padded to `count`: the dispatcher drops trailing
    arguments equal to their defaults, so autograd may see fewer inputs."""
    flags = list(ctx.needs_input_grad)
    return (flags + [False] * count)[:count]


def _trim(ctx, grads: tuple) -> tuple:
    """One gradient per input autograd actually saw (see _needs_grad)."""
    return grads[: len(ctx.needs_input_grad)]


def _conv_args(stride, padding, output_padding, groups, dilation) -> tuple:
    return (as_pair(stride), as_pair(padding), as_pair(output_padding), groups, as_pair(dilation))


def _forward_setup(ctx, inputs, output):
    input, weight, bias, stride, padding, output_padding, groups, dilation = inputs
    ctx.save_for_backward(input, weight)
    ctx.conv_args = _conv_args(stride, padding, output_padding, groups, dilation)
    ctx.has_bias = bias is not None


def _forward_backward(ctx, grad_output):
    input, weight = ctx.saved_tensors
    need_input, need_weight, need_bias = _needs_grad(ctx, 3)
    mask = [need_input, need_weight, need_bias and ctx.has_bias]
    if not any(mask):
        return _trim(ctx, (None,) * 8)
    grad_input, grad_weight, grad_bias = torch.ops.convt.conv_transpose2d_backward(
        grad_output, input, weight, *ctx.conv_args, mask
    )
    grads = (
        grad_input if mask[0] else None,
        grad_weight if mask[1] else None,
        grad_bias if mask[2] else None,
        None, None, None, None, None,
    )
    return _trim(ctx, grads)


def _backward_setup(ctx, inputs, output):
    grad_output, input, weight, stride, padding, output_padding, groups, dilation, output_mask = inputs
    ctx.save_for_backward(grad_output, input, weight)
    ctx.conv_args = _conv_args(stride, padding, output_padding, groups, dilation)
    ctx.output_mask = list(output_mask)


def _usable(grad, requested: bool):
    """A gradient flowing into an output we computed (None or empty [0] otherwise)."""
    return grad if requested and grad is not None and grad.numel() > 0 else None


def _backward_backward(ctx, ggi, ggw, ggb):
    grad_output, input, weight = ctx.saved_tensors
    stride, padding, output_padding, groups, dilation = ctx.conv_args
    ggi = _usable(ggi, ctx.output_mask[0])
    ggw = _usable(ggw, ctx.output_mask[1])
    ggb = _usable(ggb, ctx.output_mask[2])
    need_go, need_input, need_weight = _needs_grad(ctx, 3)
    forward = torch.ops.convt.conv_transpose2d
    backward = torch.ops.convt.conv_transpose2d_backward

    d_go = d_input = d_weight = None
    if need_go:
        terms = []
        if ggi is not None:
            terms.append(forward(ggi, weight, None, stride, padding, output_padding, groups, dilation))
        if ggw is not None:
            terms.append(forward(input, ggw, None, stride, padding, output_padding, groups, dilation))
        if ggb is not None:
            shape = (-1, 1, 1) if grad_output.dim() == 3 else (1, -1, 1, 1)
            terms.append(ggb.view(shape).expand_as(grad_output))
        if terms:
            d_go = terms[0]
            for t in terms[1:]:
                d_go = d_go + t
    if need_input and ggw is not None:
        d_input = backward(grad_output, input, ggw, *ctx.conv_args, [True, False, False])[0]
    if need_weight and ggi is not None:
        d_weight = backward(grad_output, ggi, weight, *ctx.conv_args, [False, True, False])[1]
    return _trim(ctx, (d_go, d_input, d_weight, None, None, None, None, None, None))


torch.library.register_autograd(
    "convt::conv_transpose2d", _forward_backward, setup_context=_forward_setup
)
torch.library.register_autograd(
    "convt::conv_transpose2d_backward", _backward_backward, setup_context=_backward_setup
)
