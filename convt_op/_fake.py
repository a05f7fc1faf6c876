"""Fake (meta) kernels: output shapes, strides and argument errors without data.

These mirror csrc/frontend.cpp rule for rule (same checks, same messages, same
memory-format choice) so that torch.compile and torch.export trace exactly what
the real kernels return; ``torch.library.opcheck`` and tests/test_errors.py
hold the two in step. Sizes may be symbolic (SymInt): every comparison goes
through ``torch._check`` so that it becomes a guard rather than a crash.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch._prims_common import suggest_memory_format

_SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# c10's scalar type names, as the C++ frontend prints them.
_DTYPE_NAMES = {
    torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
    torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
    torch.bool: "Bool", torch.complex32: "ComplexHalf", torch.complex64: "ComplexFloat",
    torch.complex128: "ComplexDouble",
}


def _dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def _fail(message: str) -> None:
    raise RuntimeError(message)


def as_pair(value) -> list:
    """A schema's SymInt[2] as a list of two: a bare int (or SymInt) is repeated,
    as the dispatcher does for defaults such as stride=1."""
    if isinstance(value, (int, torch.SymInt)):
        return [value, value]
    return list(value)


def _check_pair(values: Sequence, name: str) -> None:
    if len(values) != 2:
        _fail(f"conv_transpose2d: expected {name} to be a single integer value or a list of 2 values, but got {name}={list(values)}")


def _check_tensor_basics(t: torch.Tensor, name: str) -> None:
    if t.layout != torch.strided:
        _fail(f"conv_transpose2d: expected {name} to be a dense (strided) tensor, but got layout {t.layout}")
    if t.dtype not in _SUPPORTED_DTYPES:
        _fail(
            f"conv_transpose2d: unsupported dtype {_dtype_name(t.dtype)} for {name}; "
            "supported dtypes are float32, float64, float16 and bfloat16"
        )


def _check_input_dim(input: torch.Tensor) -> None:
    if input.dim() not in (3, 4):
        _fail(
            "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got "
            f"input of size: {list(input.shape)}"
        )


def _sizes(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def check_forward_args(input, weight, bias, stride, padding, output_padding, groups, dilation):
    """Validates the arguments for 4-D input; returns (N, Cout, Hout, Wout)."""
    _check_tensor_basics(input, "input")
    _check_tensor_basics(weight, "weight")
    if weight.dim() != 4:
        _fail(
            "conv_transpose2d: expected 4-D weight of shape [in_channels, out_channels/groups, "
            f"kH, kW], but got weight of size {_sizes(weight)}"
        )
    for values, name in ((stride, "stride"), (padding, "padding"), (output_padding, "output_padding"), (dilation, "dilation")):
        _check_pair(values, name)
    if input.dtype != weight.dtype:
        _fail(f"Input type ({_dtype_name(input.dtype)}) and weight type ({_dtype_name(weight.dtype)}) should be the same")
    if input.device != weight.device:
        _fail(f"Expected input and weight to be on the same device, but got input on {input.device} and weight on {weight.device}")
    if bias is not None:
        _check_tensor_basics(bias, "bias")
        if input.dtype != bias.dtype:
            _fail(f"Input type ({_dtype_name(input.dtype)}) and bias type ({_dtype_name(bias.dtype)}) should be the same")
        if input.device != bias.device:
            _fail(f"Expected input and bias to be on the same device, but got input on {input.device} and bias on {bias.device}")

    torch._check(groups > 0, lambda: "non-positive groups is not supported")
    for i in range(2):
        torch._check(stride[i] > 0, lambda: "non-positive stride is not supported")
        torch._check(dilation[i] > 0, lambda: "dilation should be greater than zero")
        torch._check(padding[i] >= 0, lambda: "negative padding is not supported")
        torch._check(output_padding[i] >= 0, lambda: "negative output_padding is not supported")
    torch._check(
        (output_padding[0] < stride[0] or output_padding[0] < dilation[0])
        and (output_padding[1] < stride[1] or output_padding[1] < dilation[1]),
        lambda: "output padding must be smaller than either stride or dilation, but got "
        f"output_padding_height: {output_padding[0]} output_padding_width: {output_padding[1]} "
        f"stride_height: {stride[0]} stride_width: {stride[1]} "
        f"dilation_height: {dilation[0]} dilation_width: {dilation[1]}",
    )
    torch._check(
        weight.size(0) >= groups,
        lambda: f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
        f"but got weight of size {_sizes(weight)} instead",
    )
    torch._check(
        weight.size(0) % groups == 0,
        lambda: f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
        f"but got weight of size {_sizes(weight)} instead",
    )
    torch._check(
        input.size(1) == weight.size(0),
        lambda: f"Given transposed=1, weight of size {_sizes(weight)}, expected input{_sizes(input)} to have "
        f"{weight.size(0)} channels, but got {input.size(1)} channels instead",
    )
    torch._check(weight.numel() > 0, lambda: f"non-empty 4D weight tensor expected, but got: {_sizes(weight)}")
    torch._check(
        input.size(0) == 0 or (input.size(2) > 0 and input.size(3) > 0),
        lambda: f"Only zero batch or zero channel inputs are supported, but got input shape: {_sizes(input)}",
    )
    cout = weight.size(1) * groups
    if bias is not None:
        torch._check(
            bias.dim() == 1 and bias.size(0) == cout,
            lambda: f"Given transposed=1, weight of size {_sizes(weight)}, expected bias to be 1-dimensional "
            f"with {cout} elements, but got bias of size {_sizes(bias)} instead",
        )
    h, w = input.size(2), input.size(3)
    hout = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (weight.size(2) - 1) + output_padding[0] + 1
    wout = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (weight.size(3) - 1) + output_padding[1] + 1
    torch._check(
        hout > 0 and wout > 0,
        lambda: f"Given input size per channel: ({h} x {w}). Calculated output size per channel: "
        f"({hout} x {wout}). Output size is too small",
    )
    return input.size(0), cout, hout, wout


def output_memory_format(input: torch.Tensor, weight: torch.Tensor) -> torch.memory_format:
    """channels_last when input or weight suggests it (PyTorch's cuDNN/oneDNN rule)."""
    if torch.channels_last in (suggest_memory_format(input), suggest_memory_format(weight)):
        return torch.channels_last
    return torch.contiguous_format


def _empty(shape, like: torch.Tensor, memory_format=torch.contiguous_format) -> torch.Tensor:
    return torch.empty(shape, dtype=like.dtype, device=like.device, memory_format=memory_format)


@torch.library.register_fake("convt::conv_transpose2d")
def _conv_transpose2d_fake(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    # Defaults repeat the schema's: the dispatcher drops arguments equal to their default.
    stride, padding, output_padding, dilation = map(as_pair, (stride, padding, output_padding, dilation))
    _check_input_dim(input)
    unbatched = input.dim() == 3
    in4 = input.unsqueeze(0) if unbatched else input
    shape = check_forward_args(in4, weight, bias, stride, padding, output_padding, groups, dilation)
    out = _empty(shape, in4, output_memory_format(in4, weight))
    return out.squeeze(0) if unbatched else out


@torch.library.register_fake("convt::conv_transpose2d_backward")
def _conv_transpose2d_backward_fake(grad_output, input, weight, stride, padding, output_padding, groups, dilation, output_mask):
    stride, padding, output_padding, dilation = map(as_pair, (stride, padding, output_padding, dilation))
    _check_input_dim(input)
    if grad_output.dim() != input.dim():
        _fail(f"conv_transpose2d_backward: grad_output has {grad_output.dim()} dimensions but input has {input.dim()}")
    unbatched = input.dim() == 3
    in4 = input.unsqueeze(0) if unbatched else input
    go4 = grad_output.unsqueeze(0) if unbatched else grad_output
    expected = check_forward_args(in4, weight, None, stride, padding, output_padding, groups, dilation)
    _check_tensor_basics(grad_output, "grad_output")
    if grad_output.dtype != input.dtype:
        _fail(f"grad_output type ({_dtype_name(grad_output.dtype)}) and input type ({_dtype_name(input.dtype)}) should be the same")
    if grad_output.device != input.device:
        _fail(
            "Expected grad_output and input to be on the same device, but got grad_output on "
            f"{grad_output.device} and input on {input.device}"
        )
    torch._check(
        all(a == b for a, b in zip(go4.shape, expected)),
        lambda: f"conv_transpose2d_backward: grad_output has size {_sizes(go4)} but the forward output "
        f"has size [{', '.join(str(s) for s in expected)}]",
    )
    # A distinct empty tensor for each unrequested output, as the kernel returns.
    grad_input, grad_weight, grad_bias = (_empty((0,), weight) for _ in range(3))
    if output_mask[0]:
        grad_input = _empty(in4.shape, in4, output_memory_format(in4, weight))
        if unbatched:
            grad_input = grad_input.squeeze(0)
    if output_mask[1]:
        grad_weight = _empty(weight.shape, weight, suggest_memory_format(weight))
    if output_mask[2]:
        grad_bias = _empty((expected[1],), weight)
    return grad_input, grad_weight, grad_bias
