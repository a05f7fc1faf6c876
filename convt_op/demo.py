"""`python -m convt_op demo`: a small decoder run with PyTorch's and convt's transposed convolution.

Builds the op (first run only), then for two embedded decoders (a DCGAN generator
and a UNet-style up path) runs the model as PyTorch ships it and again after
convt_op.convert(), checks that the outputs agree, and prints a timing table.
Runs on CUDA when available (and the CUDA kernels are built), else on the CPU.
"""

from __future__ import annotations

import copy
import statistics
import sys
import time

import torch
from torch import nn


class DCGANGenerator(nn.Module):
    """The DCGAN generator (Radford et al.): z -> 3 x 64 x 64 image."""

    def __init__(self, nz: int = 100, ngf: int = 64, channels: int = 3):
        super().__init__()
        layers = []
        widths = [ngf * 8, ngf * 4, ngf * 2, ngf]
        layers += [nn.ConvTranspose2d(nz, widths[0], 4, 1, 0, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU(True)]
        for cin, cout in zip(widths, widths[1:]):
            layers += [nn.ConvTranspose2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)]
        layers += [nn.ConvTranspose2d(ngf, channels, 4, 2, 1, bias=False), nn.Tanh()]
        self.net = nn.Sequential(*layers)
        self.nz = nz

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)

    def example_input(self, batch: int, device) -> torch.Tensor:
        return torch.randn(batch, self.nz, 1, 1, device=device)


class UNetUpPath(nn.Module):
    """The expanding half of a UNet: 2x2 stride-2 up-convolutions, each followed by a 3x3 conv."""

    def __init__(self, base: int = 64, depth: int = 4):
        super().__init__()
        chans = [base * 2**i for i in range(depth, -1, -1)]  # 1024, 512, 256, 128, 64 for base 64
        self.ups = nn.ModuleList(nn.ConvTranspose2d(c, c // 2, 2, stride=2) for c in chans[:-1])
        self.convs = nn.ModuleList(nn.Conv2d(c // 2, c // 2, 3, padding=1) for c in chans[:-1])
        self.head = nn.Conv2d(chans[-1], 2, 1)
        self.in_channels = chans[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for up, conv in zip(self.ups, self.convs):
            x = torch.relu(conv(up(x)))
        return self.head(x)

    def example_input(self, batch: int, device) -> torch.Tensor:
        return torch.randn(batch, self.in_channels, 8, 8, device=device)


def _time_ms(fn, device: torch.device, reps: int) -> float:
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _pick_device(requested: str | None) -> torch.device:
    if requested is not None:
        return torch.device(requested)
    if torch.cuda.is_available() and torch._C._dispatch_has_kernel_for_dispatch_key("convt::conv_transpose2d", "CUDA"):
        return torch.device("cuda")
    return torch.device("cpu")


def main(device: str | None = None) -> int:
    print("convt_op demo: building/loading the operator library ...", flush=True)
    import convt_op

    dev = _pick_device(device)
    on_gpu = dev.type == "cuda"
    # TF32 on the GPU (PyTorch's default for convolutions) on both sides.
    tolerance = 1e-2 if on_gpu else 1e-4
    batch, reps = (64, 20) if on_gpu else (8, 5)
    name = torch.cuda.get_device_name(dev) if on_gpu else "CPU"
    print(f"device: {name}; batch {batch}; median of {reps} runs after warm-up", flush=True)

    torch.manual_seed(0)
    rows = []
    for model_name, model in (("DCGAN generator", DCGANGenerator()), ("UNet up path", UNetUpPath())):
        print(f"  {model_name}: running ...", flush=True)
        reference = model.to(dev).eval()
        ours = convt_op.convert(copy.deepcopy(reference))
        x = reference.example_input(batch, dev)
        with torch.no_grad():
            expected, got = reference(x), ours(x)
            err = ((got.double() - expected.double()).norm() / expected.double().norm()).item()
            for m in (reference, ours):  # warm-up (cuDNN heuristics, our first launches)
                m(x)
            t_ref = _time_ms(lambda: reference(x), dev, reps)
            t_ours = _time_ms(lambda: ours(x), dev, reps)
        rows.append((model_name, tuple(got.shape), err, t_ref, t_ours))
        if not err <= tolerance:
            print(f"  {model_name}: outputs differ: relative error {err:.2e} > {tolerance:.0e}", file=sys.stderr)
            return 1

    print()
    print("| model | output | rel. error | PyTorch ms | convt ms | speedup |")
    print("|---|---|---|---|---|---|")
    for model_name, shape, err, t_ref, t_ours in rows:
        print(f"| {model_name} | {list(shape)} | {err:.1e} | {t_ref:.3f} | {t_ours:.3f} | {t_ref / t_ours:.2f}x |")
    print("\nOutputs agree with PyTorch's. (On the CPU the convt path is a reference implementation, not a fast one.)")
    return 0
