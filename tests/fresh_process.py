"""Running a script in a fresh Python process that imports this same convt_op."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import convt_op


def run_python(script: str, *args: str, env_extra: dict | None = None, timeout: int = 600) -> str:
    """Runs `python -c script args...` with this checkout's convt_op importable; returns stdout."""
    env = dict(os.environ)
    package_root = str(Path(convt_op.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"subprocess failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc.stdout


def run_pytest(tests: list[str], env_extra: dict[str, str], passed: int, *options: str, timeout: int = 600) -> None:
    """Runs pytest on `tests` (node ids) in a fresh process with `env_extra` set (the knobs are read
    once per process, so a knob test runs its cases there) and asserts that it passed, exactly
    `passed` tests."""
    env = dict(os.environ, **env_extra)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, *tests],
                          env=env, capture_output=True, text=True, timeout=timeout)
    ok = proc.returncode == 0 and re.search(rf"(?<![0-9]){passed} passed", proc.stdout) is not None
    assert ok, f"expected {passed} passed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


# The warp-specialized forward's tile kind (kTilesFull 0, kTilesShort 1, kTilesWide 2, kTilesPaired 3) in
# forward_check's kernel names (spaces removed): wgmma_ws_fwd_kernel<T, kTiles, kNchwOut, kNchwIn>.
WS_TILE_KIND = r"wgmma_ws_fwd_kernel<[^,<>]+,(\d),(?:true|false),(?:true|false)>"


def forward_check(case, dtype, seed: int, kernel_filter: str) -> tuple[float, str, int]:
    """Inside a fresh-process script: one forward of `case` (tests/cases.py) under the CUDA
    profiler, the way the knob tests check a kernel choice. Returns the relative Frobenius error
    against float64 on the CPU, the '|'-joined names (spaces removed) of the kernels whose name
    contains `kernel_filter` ('' when none ran), and 1 if a second call is bit-identical, else 0."""
    import torch
    import torch.nn.functional as F

    x, w, b = case.make(dtype, "cuda", seed=seed)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        torch.cuda.synchronize()
    y2 = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
    names = "|".join(e.key.replace(" ", "") for e in prof.key_averages() if kernel_filter in e.key)
    ref = F.conv_transpose2d(*(t.cpu().double() if t is not None else None for t in (x, w, b)), **case.kwargs())
    err = ((y.cpu().double() - ref).norm() / ref.norm()).item()
    return err, names, int(torch.equal(y, y2))


def backward_check(case, dtype, seeds: tuple[int, int], device: str = "cuda") -> tuple[float, list[str]]:
    """Inside a fresh-process script: one forward of `case` and its backward under the CUDA profiler,
    the way the knob tests check which backward kernels ran. seeds: the operands' and grad_output's.
    Returns the largest relative Frobenius error of the gradients against float64 on the CPU and
    the names of the kernels the backward ran."""
    import torch
    import torch.nn.functional as F

    x, w, b = case.make(dtype, device, seed=seeds[0])
    params = [t.requires_grad_() for t in (x, w, b) if t is not None]
    y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
    go = torch.randn(y.shape, generator=torch.Generator().manual_seed(seeds[1]), dtype=torch.float64)
    activity = torch.profiler.ProfilerActivity.CUDA if device == "cuda" else torch.profiler.ProfilerActivity.CPU
    with torch.profiler.profile(activities=[activity]) as prof:
        y.backward(go.to(device, dtype))
        if device == "cuda":
            torch.cuda.synchronize()
    keys = [e.key for e in prof.key_averages()]
    refs = [t.detach().cpu().double().requires_grad_() for t in params]
    F.conv_transpose2d(refs[0], refs[1], refs[2] if b is not None else None, **case.kwargs()).backward(go)
    err = max(((t.grad.cpu().double() - r.grad).norm() / r.grad.norm()).item() for t, r in zip(params, refs))
    return err, keys


def poisoned_forward_check(case, dtype, seed: int) -> tuple[float, list[str], int, int]:
    """Inside a fresh-process script: a forward of `case` into output memory filled with NaN first
    (the caching allocator hands the freed, poisoned block back; up to three tries), so that outputs a
    kernel never writes show as NaN; then a second call under the CUDA profiler. Returns the relative
    Frobenius error of the first result against float64 on the CPU, the names of the kernels the
    second call ran, 1 if the first result landed in the poisoned block (else 0), and 1 if the two
    results are bit-identical (else 0)."""
    import torch
    import torch.nn.functional as F

    x, w, b = case.make(dtype, "cuda", seed=seed)
    for _attempt in range(3):
        y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        y.fill_(float("nan"))
        ptr = y.data_ptr()
        del y
        y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        if y.data_ptr() == ptr:
            break
        del y
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        y2 = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        torch.cuda.synchronize()
    keys = [e.key for e in prof.key_averages()]
    ref = F.conv_transpose2d(*(t.cpu().double() if t is not None else None for t in (x, w, b)), **case.kwargs())
    err = ((y.cpu().double() - ref).norm() / ref.norm()).item()
    return err, keys, int(y.data_ptr() == ptr), int(torch.equal(y, y2))
