"""The module API: a drop-in ConvTranspose2d and convert(model)."""

from __future__ import annotations

import torch
from torch import nn

from .ops import conv_transpose2d


class ConvTranspose2d(nn.ConvTranspose2d):
    """``nn.ConvTranspose2d`` computed by convt's kernels.

    Same constructor, parameters, state_dict and ``forward(input, output_size=None)``;
    only ``padding_mode="zeros"`` exists for transposed convolutions, as in PyTorch.
    """

    def forward(self, input: torch.Tensor, output_size: list[int] | None = None) -> torch.Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose2d")
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, 2, self.dilation
        )
        return conv_transpose2d(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )


def convert(model: nn.Module) -> nn.Module:
    """Swaps every ``nn.ConvTranspose2d`` in ``model`` (itself included) for ours, in place.

    The swap changes each module's class only: parameters, buffers, hooks and the
    state_dict stay the same objects, so optimizers built before the call keep
    working. Subclasses of nn.ConvTranspose2d with their own forward are left alone.
    Returns ``model``.
    """
    for module in model.modules():
        if type(module) is nn.ConvTranspose2d:
            module.__class__ = ConvTranspose2d
    return model
