"""The functional API: F.conv_transpose2d's signature over torch.ops.convt."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def _pair(value, name: str) -> list:
    """An int, or a sequence of one or two ints, as a list of two (like PyTorch)."""
    if isinstance(value, str):
        raise ValueError(f"conv_transpose2d: {name}={value!r} is not supported; pass an int or a pair of ints")
    if isinstance(value, Sequence) and not isinstance(value, torch.Tensor):
        values = list(value)
        if len(values) == 1:
            return values * 2
        if len(values) == 2:
            return values
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of 2 values to match the "
            f"convolution dimensions, but got {name}={values}"
        )
    return [value, value]


def conv_transpose2d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> torch.Tensor:
    """Same as ``torch.nn.functional.conv_transpose2d``, computed by convt's kernels.

    input: [N, Cin, H, W] or unbatched [Cin, H, W]; weight: [Cin, Cout/groups, kH, kW].
    stride, padding, output_padding, dilation: an int or a pair. The output keeps
    the input's memory format (channels_last in, channels_last out).
    """
    return torch.ops.convt.conv_transpose2d(
        input,
        weight,
        bias,
        _pair(stride, "stride"),
        _pair(padding, "padding"),
        _pair(output_padding, "output_padding"),
        groups,
        _pair(dilation, "dilation"),
    )
