"""A model of forward_store_bound.cu's work split and index math, run on the CPU in float64.

It does what store_bound_kernel does, in the same order: plane groups (image, group, block of CPT
output channels), the group's weights staged as [tap][ci][CPT] with a padded tap pitch (zeros past
the group's channels), items numbered (band, row residue, column) with a band SH * kRows rows, an
item's kRows rows oy0 + SH k sharing oy0's row taps and reading input rows iy + k, tap_walk.cuh's
first tap per residue (the search past its 32-entry table), the walk along taps that skips input
coordinates past the end and stops before the start, and the stores that skip rows past Hout and
channels past the group's. It counts how often each output element is written: every one exactly
once is the kernel's contract (no unwritten element, no race between items).

The GPU tests (tests/test_cuda.py, test_forward_store_bound_*) check the kernel itself; this
checks the scheme where no GPU is, and is the place to try a change of the work split first.

usage: python scripts/store_bound_model.py   (runs the built-in cases against F.conv_transpose2d)
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

K_ROWS = 2     # forward_store_bound.cu kRows
K_TAP_PAD = 4  # kTapPad
K_TAP_TABLE = 32  # tap_walk.cuh kMaxTapTable


def _first_tap_of_residue(r: int, stride: int, dilation: int, kernel: int) -> int:
    """geometry.h axis_phase(r).first_tap, or `kernel` where no tap reaches residue r."""
    for c in range(min(stride // math.gcd(stride, dilation), kernel)):
        if (c * dilation) % stride == r:
            return c
    return kernel


def _first_tap(kernel: int, stride: int, padding: int, dilation: int, o: int) -> tuple[int, int]:
    """tap_walk.cuh first_tap: (first tap, its input coordinate) for output coordinate o."""
    q = o + padding
    r = q % stride
    if stride <= K_TAP_TABLE:
        t = _first_tap_of_residue(r, stride, dilation, kernel)
    else:  # the kernel's search loop
        t = kernel
        for c in range(min(stride // math.gcd(stride, dilation), kernel)):
            if (c * dilation) % stride == r:
                t = c
                break
    return t, int((q - t * dilation) / stride)  # C++ division truncates; exact when t < kernel


def channels_per_thread(cout_g: int) -> int:
    return 16 if cout_g >= 16 else 8


def model_forward(x, w, b, stride, padding, output_padding, dilation, groups):
    """(output, writes): the kernel's output in float64 and how many times each element was written."""
    N, Cin, H, W = x.shape
    _, Cout_g, KH, KW = w.shape
    (SH, SW), (PH, PW), (DH, DW) = stride, padding, dilation
    Hout = (H - 1) * SH - 2 * PH + DH * (KH - 1) + output_padding[0] + 1
    Wout = (W - 1) * SW - 2 * PW + DW * (KW - 1) + output_padding[1] + 1
    Cin_g = Cin // groups
    CPT = channels_per_thread(Cout_g)
    co_blocks = -(-Cout_g // CPT)
    step_y, in_step_y = SH // math.gcd(SH, DH), DH // math.gcd(SH, DH)
    step_x, in_step_x = SW // math.gcd(SW, DW), DW // math.gcd(SW, DW)
    bands = -(-Hout // (SH * K_ROWS))
    items = bands * SH * Wout
    pitch = Cin_g * CPT + K_TAP_PAD
    out = torch.full((N, groups * Cout_g, Hout, Wout), float("nan"), dtype=torch.float64)
    writes = torch.zeros(out.shape, dtype=torch.int32)
    for z in range(N * groups * co_blocks):
        ng, cob = divmod(z, co_blocks)
        n, grp = divmod(ng, groups)
        co_l0 = cob * CPT
        ws = [0.0] * (KH * KW * pitch)
        for i in range(Cin_g * CPT * KH * KW):  # thread i's element of the staging
            tap, rest = i % (KH * KW), i // (KH * KW)
            j, ci = rest % CPT, rest // CPT
            ky, kx = divmod(tap, KW)
            if co_l0 + j < Cout_g:
                ws[tap * pitch + ci * CPT + j] = float(w[grp * Cin_g + ci, co_l0 + j, ky, kx])
        for item in range(items):
            ox, rest = item % Wout, item // Wout
            band = rest // SH
            oy0 = band * SH * K_ROWS + (rest - band * SH)
            if oy0 >= Hout:
                continue
            acc = [[0.0] * CPT for _ in range(K_ROWS)]
            ky, iy = _first_tap(KH, SH, PH, DH, oy0)
            kx0, ix0 = _first_tap(KW, SW, PW, DW, ox)
            while ky < KH:
                if iy < H and iy + K_ROWS - 1 < 0:
                    break
                if iy < H:
                    valid = [0 <= iy + k < H for k in range(K_ROWS)]
                    kx, ix = kx0, ix0
                    while kx < KW:
                        if ix < 0:
                            break
                        if ix < W:
                            base = (ky * KW + kx) * pitch
                            for ci in range(Cin_g):
                                xv = [float(x[n, grp * Cin_g + ci, iy + k, ix]) if valid[k] else 0.0
                                      for k in range(K_ROWS)]
                                for j in range(CPT):
                                    for k in range(K_ROWS):
                                        acc[k][j] += xv[k] * ws[base + ci * CPT + j]
                        kx, ix = kx + step_x, ix - in_step_x
                ky, iy = ky + step_y, iy - in_step_y
            for k in range(K_ROWS):
                oy = oy0 + k * SH
                if oy >= Hout:
                    break
                for j in range(CPT):
                    if co_l0 + j < Cout_g:
                        co = grp * Cout_g + co_l0 + j
                        out[n, co, oy, ox] = acc[k][j] + (float(b[co]) if b is not None else 0.0)
                        writes[n, co, oy, ox] += 1
    return out, writes


# (N, Cin, Cout, H, W, kernel, stride, padding, output_padding, dilation, groups, bias): the GPU
# tests' STORE_BOUND_CASES that are small enough for Python loops.
CASES = [
    (2, 4, 16, 5, 7, (3, 3), (5, 5), (1, 1), (0, 0), (2, 2), 1, False),  # kb1_81's geometry
    (2, 16, 32, 4, 6, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), 2, True),  # kb1_75's
    (2, 4, 24, 3, 4, (3, 3), (3, 2), (2, 0), (2, 1), (1, 2), 1, True),   # a partial 16-channel block
    (1, 6, 20, 4, 3, (2, 4), (4, 3), (3, 1), (1, 2), (3, 1), 2, True),   # 8-channel blocks, wide padding
    (1, 2, 9, 3, 3, (4, 1), (3, 1), (0, 0), (0, 0), (1, 1), 1, True),    # a one-channel second block
    (1, 3, 16, 3, 5, (5, 3), (2, 2), (3, 1), (1, 1), (1, 3), 1, False),  # row 0 of an item before the input
    (1, 4, 8, 3, 2, (2, 2), (40, 3), (0, 1), (0, 0), (1, 1), 1, True),   # past the tap table
    (2, 2, 16, 70, 9, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1, True),  # stride 1
]


def check(case) -> tuple[float, bool]:
    """(largest absolute difference from F.conv_transpose2d in float64, every element written once)."""
    N, Cin, Cout, H, W, k, s, p, op, d, g, bias = case
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(N, Cin, H, W, generator=gen, dtype=torch.float64)
    w = torch.randn(Cin, Cout // g, *k, generator=gen, dtype=torch.float64)
    b = torch.randn(Cout, generator=gen, dtype=torch.float64) if bias else None
    ref = F.conv_transpose2d(x, w, b, s, p, op, g, d)
    out, writes = model_forward(x, w, b, s, p, op, d, g)
    return (out - ref).abs().max().item(), bool((writes == 1).all())


if __name__ == "__main__":
    for case in CASES:
        err, once = check(case)
        print(case, f"max |diff| {err:.1e}", "each element written once" if once else "WRITES WRONG")
