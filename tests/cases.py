"""The parameter grid shared by the CPU and GPU numerics tests.

Every case is small enough for float64 references on the CPU. The grid crosses
stride x dilation x padding x output_padding x kernel shape, and adds groups,
depthwise, bias, unbatched, layouts and batch 0 on top; `ids` name each case.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Case:
    N: int | None  # None: unbatched 3-D input
    Cin: int
    Cout: int
    H: int
    W: int
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    output_padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = True
    layout: str = "contiguous"  # contiguous | channels_last | noncontiguous

    @property
    def id(self) -> str:
        n = "u" if self.N is None else f"n{self.N}"
        return (
            f"{n}_c{self.Cin}x{self.Cout}_{self.H}x{self.W}_k{self.kernel[0]}x{self.kernel[1]}"
            f"_s{self.stride[0]}{self.stride[1]}_p{self.padding[0]}{self.padding[1]}"
            f"_op{self.output_padding[0]}{self.output_padding[1]}_d{self.dilation[0]}{self.dilation[1]}"
            f"_g{self.groups}{'_b' if self.bias else ''}_{self.layout}"
        )

    def kwargs(self) -> dict:
        return dict(
            stride=self.stride,
            padding=self.padding,
            output_padding=self.output_padding,
            groups=self.groups,
            dilation=self.dilation,
        )

    def make(self, dtype=torch.float32, device="cpu", seed: int = 0):
        """Random (input, weight, bias) for this case; never zeros."""
        gen = torch.Generator().manual_seed(seed)
        shape = (self.Cin, self.H, self.W) if self.N is None else (self.N, self.Cin, self.H, self.W)
        wshape = (self.Cin, self.Cout // self.groups, *self.kernel)
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        w = torch.randn(wshape, generator=gen, dtype=torch.float64)
        b = torch.randn(self.Cout, generator=gen, dtype=torch.float64) if self.bias else None
        x, w = x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)
        b = b.to(device=device, dtype=dtype) if b is not None else None
        if self.layout == "channels_last" and x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        elif self.layout == "noncontiguous":
            # Same values, strided storage: every other element of a wider tensor.
            wide = torch.empty((*x.shape[:-1], 2 * x.shape[-1]), dtype=dtype, device=device)
            wide[..., ::2] = x
            x = wide[..., ::2]
            assert not x.is_contiguous()
        return x, w, b

    def output_is_channels_last(self) -> bool:
        return self.layout == "channels_last" and self.N not in (None, 0)


def reference(x, w, b, case: Case) -> torch.Tensor:
    """PyTorch's result computed in float64 on the CPU."""
    to64 = lambda t: None if t is None else t.detach().to(device="cpu", dtype=torch.float64)
    return F.conv_transpose2d(to64(x), to64(w), to64(b), **case.kwargs())


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    out = out.detach().to(device="cpu", dtype=torch.float64)
    if ref.numel() == 0:
        return 0.0
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


# Relative (Frobenius) error allowed against the float64 reference.
TOLERANCE = {
    torch.float64: 1e-12,
    torch.float32: 1e-5,  # fp32-accurate paths (CPU, or CUDA with allow_tf32=False)
    "tf32": 2e-3,
    torch.float16: 3e-3,
    torch.bfloat16: 2e-2,
}


def _geometry_grid() -> list[Case]:
    """stride x dilation x padding x output_padding x kernel, on a small problem."""
    cases = []
    for kernel, stride, dilation, padding in itertools.product(
        [(1, 1), (3, 3), (2, 4), (3, 5)],
        [(1, 1), (2, 2), (3, 2), (5, 5)],
        [(1, 1), (2, 2), (1, 3)],
        [(0, 0), (1, 2)],
    ):
        # output_padding must be < stride or < dilation on each axis: take the largest allowed.
        op = tuple(max(s, d) - 1 for s, d in zip(stride, dilation))
        case = Case(2, 4, 6, 5, 7, kernel, stride, padding, (0, 0), dilation)
        for output_padding in {(0, 0), op}:
            c = replace(case, output_padding=output_padding)
            hout = (c.H - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kernel[0] - 1) + output_padding[0] + 1
            wout = (c.W - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kernel[1] - 1) + output_padding[1] + 1
            if hout > 0 and wout > 0:
                cases.append(c)
    return cases


def _feature_cases() -> list[Case]:
    base = Case(2, 8, 12, 6, 5, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    cases = [
        replace(base, groups=2),
        replace(base, groups=4, stride=(2, 3), dilation=(2, 1), padding=(1, 2), output_padding=(0, 0)),
        replace(base, Cin=8, Cout=8, groups=8),  # depthwise
        replace(base, Cin=8, Cout=16, groups=8, kernel=(4, 4), output_padding=(0, 0)),  # depthwise, multiplier 2
        replace(base, bias=False),
        replace(base, N=None),  # unbatched
        replace(base, N=None, groups=4, bias=False),
        replace(base, N=0),  # empty batch
        replace(base, layout="channels_last"),
        replace(base, layout="channels_last", groups=2, bias=False),
        replace(base, layout="noncontiguous"),
        replace(base, N=None, layout="noncontiguous"),
        replace(base, N=1, Cin=1, Cout=1, H=1, W=1, kernel=(1, 1), stride=(1, 1), padding=(0, 0), output_padding=(0, 0)),
        replace(base, N=3, Cin=3, Cout=5, H=9, W=1, kernel=(1, 3), stride=(1, 4), padding=(0, 1), output_padding=(0, 3)),
        replace(base, Cin=16, Cout=24, H=11, W=13, kernel=(4, 4), stride=(2, 2), padding=(1, 1), output_padding=(0, 0)),
        replace(base, Cin=5, Cout=7, H=4, W=4, kernel=(7, 3), stride=(1, 1), padding=(3, 1), output_padding=(0, 0)),
        # Append new cases here, at the end: test suites pick FEATURE_CASES[i] by position.
        # Padding beyond the kernel's reach (heavy cropping), stride 3 with dilation.
        replace(base, Cin=4, Cout=6, H=6, W=7, kernel=(3, 3), stride=(3, 3), padding=(4, 3), output_padding=(2, 0), dilation=(1, 2)),
        # Kernel larger than the input, output_padding on one axis only.
        replace(base, Cin=3, Cout=4, H=2, W=3, kernel=(5, 6), stride=(1, 2), padding=(0, 0), output_padding=(0, 1)),
        # Depthwise in channels_last.
        replace(base, Cin=8, Cout=8, groups=8, layout="channels_last"),
        # Stride 1 with output_padding allowed by dilation; groups with Cin_g != Cout_g; channels_last.
        replace(base, Cin=6, Cout=9, groups=3, stride=(1, 1), dilation=(2, 3), padding=(2, 0), output_padding=(1, 2), layout="channels_last"),
        # Depthwise, channels_last with a channel count that is not a multiple of the vector width.
        replace(base, Cin=6, Cout=6, groups=6, layout="channels_last"),
        # Depthwise, multiplier 3, strided input.
        replace(base, Cin=5, Cout=15, groups=5, layout="noncontiguous", W=9),
        # Depthwise, channels_last, weights too large for the GPU kernel's shared-memory staging.
        replace(base, Cin=128, Cout=128, groups=128, H=3, W=4, kernel=(13, 13), padding=(3, 5), output_padding=(0, 1), layout="channels_last"),
        # Depthwise 2x2 / stride 2 (the GPU's compile-time x geometries), even and odd padding.
        replace(base, Cin=8, Cout=8, groups=8, kernel=(2, 2), padding=(0, 0), output_padding=(0, 0), W=8),
        replace(base, Cin=8, Cout=16, groups=8, kernel=(2, 2), padding=(1, 1), output_padding=(0, 1), W=9),
    ]
    return cases


def _depthwise_grid() -> list[Case]:
    """The geometry grid again with one input channel per group (the GPU's depthwise kernel),
    alternating layouts and channel multipliers 1 and 2."""
    cases = []
    for i, c in enumerate(_geometry_grid()):
        multiplier = 1 + i % 2
        layout = ("nchw", "channels_last", "noncontiguous")[i % 3]
        cases.append(replace(c, Cin=4, Cout=4 * multiplier, groups=4, layout=layout, bias=i % 4 < 2))
    return cases


GEOMETRY_CASES = _geometry_grid()
FEATURE_CASES = _feature_cases()
ALL_CASES = GEOMETRY_CASES + FEATURE_CASES
DEPTHWISE_CASES = _depthwise_grid()  # GPU suite only (the CPU kernel has no depthwise path)
