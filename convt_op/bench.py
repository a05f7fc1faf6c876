"""``python -m convt_op bench``: convt against PyTorch on the benchmark suite.

For every case (shape x dtype x layout x mode), in one process and on the same
random inputs (never zeros):

1. correctness first: our result (forward output; in fwdbwd mode also the
   gradients of input, weight and bias; in grad_input / grad_weight mode that one
   gradient from the backward operator alone) is compared with PyTorch computed in
   float64 on the same (rounded) inputs, by relative Frobenius error. The
   output buffer is poisoned with NaN before the checked run (see
   ``_poisoned_run``), so an element the kernel never writes fails. A case over
   its dtype's tolerance is reported as FAIL, is not timed, and makes the
   command exit with status 1;
2. then our op and ``F.conv_transpose2d`` (in the grad modes, our backward op and
   ``aten.convolution_backward`` with the same output_mask) are timed with CUDA events
   (``triton.testing.do_bench``, median, when triton is importable; otherwise
   an equivalent event loop with warm-up and an L2 flush before each call);
3. each case gets a floor: max(minimum bytes / copy bandwidth,
   FLOPs / matmul rate), both measured once at the start of the same run
   (docs/benchmarks/README.md explains the counts).

Writes results.json, results.md and speedup.png (if matplotlib is present)
into --out, and prints the Markdown table last. Exit status: 0 all good,
1 some case failed its check or errored, 2 nothing could run (no GPU, no CUDA
kernels): a one-line message, no traceback.

``--impl pytorch`` times F.conv_transpose2d against itself (speedup ~1.0):
a check of the harness that needs no convt kernels.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import platform
import statistics
import sys
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .bench_report import config_key, config_label, summarize, summary_markdown

SUITE_FILE = Path(__file__).with_name("bench_suite.json")

DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}
DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp64": "float64"}
LAYOUTS = ("nchw", "channels_last")
LAYOUT_ALIASES = {"cl": "channels_last", "nhwc": "channels_last", "contiguous": "nchw"}
# fwd: forward. fwdbwd: forward + .backward() (grads of input, weight, bias).
# grad_input / grad_weight: one backward kernel alone, through the backward operator with
# output_mask asking for that gradient only (PyTorch: aten.convolution_backward, the same).
MODES = ("fwd", "fwdbwd", "grad_input", "grad_weight")
GRAD_MODES = {"grad_input": 0, "grad_weight": 1}  # mode -> index in the backward's results

# Relative Frobenius error allowed against the float64 reference; the same
# numbers as tests/cases.py TOLERANCE (tests are not part of the package).
TOLERANCE = {
    "float64": 1e-12,
    "float32": 1e-5,  # allow_tf32=False: fp32-accurate
    "tf32": 2e-3,  # float32 with allow_tf32=True
    "float16": 3e-3,
    "bfloat16": 2e-2,
}



class Unavailable(Exception):
    """Nothing can be benchmarked here; the message is printed as one line (exit 2)."""


# --------------------------------------------------------------------------- shapes


@dataclass(frozen=True)
class Shape:
    name: str
    N: int
    Cin: int
    H: int
    W: int
    Cout: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    output_padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    bias: bool

    @classmethod
    def from_json(cls, d: dict) -> Shape:
        pair = lambda v: tuple(v) if isinstance(v, (list, tuple)) else (v, v)  # noqa: E731
        return cls(
            name=d["name"], N=d["N"], Cin=d["Cin"], H=d["H"], W=d["W"], Cout=d["Cout"],
            kernel=pair(d["kernel"]), stride=pair(d.get("stride", 1)), padding=pair(d.get("padding", 0)),
            output_padding=pair(d.get("output_padding", 0)), dilation=pair(d.get("dilation", 1)),
            groups=d.get("groups", 1), bias=bool(d.get("bias", True)),
        )

    def conv_kwargs(self) -> dict:
        return dict(stride=self.stride, padding=self.padding, output_padding=self.output_padding,
                    groups=self.groups, dilation=self.dilation)

    @property
    def out_hw(self) -> tuple[int, int]:
        def extent(n, k, s, p, d, op):
            return (n - 1) * s - 2 * p + d * (k - 1) + op + 1
        return (
            extent(self.H, self.kernel[0], self.stride[0], self.padding[0], self.dilation[0], self.output_padding[0]),
            extent(self.W, self.kernel[1], self.stride[1], self.padding[1], self.dilation[1], self.output_padding[1]),
        )

    @property
    def reached_hw(self) -> tuple[int, int]:
        """Output rows and columns that at least one tap reaches. The others hold only the
        bias (stride larger than the dilated kernel's footprint, as in kb1_81: stride 5,
        kernel 3, dilation 2 reaches 3 of every 5), so the gradients of input and weight
        never read grad_output there."""
        def reached(n, k, s, p, d, out):
            return len({o for t in range(k) for i in range(n) if 0 <= (o := i * s - p + t * d) < out})
        hout, wout = self.out_hw
        return (
            reached(self.H, self.kernel[0], self.stride[0], self.padding[0], self.dilation[0], hout),
            reached(self.W, self.kernel[1], self.stride[1], self.padding[1], self.dilation[1], wout),
        )

    def numels(self) -> dict[str, int]:
        hout, wout = self.out_hw
        rh, rw = self.reached_hw
        kh, kw = self.kernel
        return {
            "input": self.N * self.Cin * self.H * self.W,
            "weight": self.Cin * (self.Cout // self.groups) * kh * kw,
            "bias": self.Cout if self.bias else 0,
            "output": self.N * self.Cout * hout * wout,
            "output_reached": self.N * self.Cout * rh * rw,
        }

    def flops(self, mode: str) -> int:
        """2 * N * Cin * (Cout/groups) * KH * KW * H * W for the forward (every tap of
        every input pixel, including taps later cropped by padding); fwdbwd is 3x
        (forward, grad_input and grad_weight each do the same multiply-adds); a grad
        mode is one of those, 1x."""
        kh, kw = self.kernel
        fwd = 2 * self.N * self.Cin * (self.Cout // self.groups) * kh * kw * self.H * self.W
        return 3 * fwd if mode == "fwdbwd" else fwd

    def min_bytes(self, dtype: torch.dtype, mode: str) -> int:
        """Each tensor touched once. fwd: read input, weight, bias; write output (all of it).
        fwdbwd adds: read grad_output, re-read input (for grad_weight), write grad_input,
        grad_weight and grad_bias (weight re-reads are negligible and not counted).
        grad_input: read grad_output and weight, write grad_input. grad_weight: read
        grad_output and input, write grad_weight. The gradients of input and weight read
        only the output positions some tap reaches (reached_hw); grad_bias reads all of
        grad_output."""
        n = self.numels()
        if mode == "grad_input":
            elems = n["output_reached"] + n["weight"] + n["input"]
        elif mode == "grad_weight":
            elems = n["output_reached"] + n["input"] + n["weight"]
        else:
            elems = n["input"] + n["weight"] + n["bias"] + n["output"]
        if mode == "fwdbwd":
            grad_output = n["output"] if self.bias else n["output_reached"]
            elems += grad_output + n["input"] + n["input"] + n["weight"] + n["bias"]
        return elems * torch.empty((), dtype=dtype).element_size()


def load_suite(path: Path = SUITE_FILE) -> list[Shape]:
    with open(path) as f:
        data = json.load(f)
    return [Shape.from_json(d) for d in data["shapes"]]


def select_shapes(shapes: list[Shape], patterns: list[str] | None) -> list[Shape]:
    """Exact names first; otherwise every shape whose name contains the pattern."""
    if not patterns:
        return shapes
    chosen: list[Shape] = []
    for pat in patterns:
        exact = [s for s in shapes if s.name == pat]
        hits = exact or [s for s in shapes if pat in s.name]
        if not hits:
            raise Unavailable(f"no suite shape matches {pat!r}; known: {', '.join(s.name for s in shapes)}")
        chosen += [s for s in hits if s not in chosen]
    return chosen


# --------------------------------------------------------------------------- configs


@dataclass(frozen=True)
class Config:
    dtype: str
    layout: str
    mode: str
    tf32: bool | None  # None: not float32

    @property
    def label(self) -> str:
        return config_label((self.dtype, self.tf32, self.layout, self.mode))

    @property
    def tolerance(self) -> float:
        if self.dtype == "float32" and self.tf32:
            return TOLERANCE["tf32"]
        return TOLERANCE[self.dtype]


def _norm(value: str, known, aliases, what: str) -> str:
    v = aliases.get(value.strip().lower(), value.strip().lower())
    if v not in known:
        raise Unavailable(f"unknown {what} {value!r}; choose from {', '.join(known)}")
    return v


def _split(text: str | None) -> list[str]:
    return [t for t in (text or "").replace(" ", ",").split(",") if t]


# `--configs record`: the configurations of a benchmark of record, the ones the forward and backward
# issues set targets for (float32 with TF32, bfloat16 and float16 forward in both layouts; float32 and
# bfloat16 NCHW training, bfloat16 channels_last training) and the training rows kept beside them
# (float32 channels_last, float16 NCHW). Strict float32 is a second run (--no-tf32).
RECORD_CONFIGS = ("float32:nchw:fwd,float32:channels_last:fwd,bfloat16:nchw:fwd,bfloat16:channels_last:fwd,"
                  "float16:nchw:fwd,float16:channels_last:fwd,float32:nchw:fwdbwd,float32:channels_last:fwdbwd,"
                  "bfloat16:nchw:fwdbwd,bfloat16:channels_last:fwdbwd,float16:nchw:fwdbwd")
# `--configs kernels`: each backward kernel alone, the configurations issue 6's "each backward kernel alone
# <= 2x its own floor" is judged on (convt_op/bench_targets.py): float32 (TF32) and bfloat16, both layouts,
# grad_input and grad_weight.
KERNEL_CONFIGS = ",".join(f"{d}:{lay}:{m}" for d in ("float32", "bfloat16") for lay in ("nchw", "channels_last")
                          for m in ("grad_input", "grad_weight"))
PRESETS = {"record": RECORD_CONFIGS, "kernels": KERNEL_CONFIGS}


def make_configs(dtypes: str, layouts: str, modes: str, tf32: bool, configs: str | None) -> list[Config]:
    """--configs dtype:layout:mode,... (or a preset: `record`, RECORD_CONFIGS; `kernels`, KERNEL_CONFIGS) if
    given, else the product of the three lists."""
    def cfg(d, lay, m):
        d = _norm(d, DTYPES, DTYPE_ALIASES, "dtype")
        return Config(d, _norm(lay, LAYOUTS, LAYOUT_ALIASES, "layout"), _norm(m, MODES, {}, "mode"),
                      tf32 if d == "float32" else None)

    if configs and configs.strip() in PRESETS:
        configs = PRESETS[configs.strip()]
    if configs:
        out = []
        for item in _split(configs):
            parts = item.split(":")
            if len(parts) != 3:
                raise Unavailable(f"--configs entry {item!r} is not dtype:layout:mode")
            out.append(cfg(*parts))
        return out
    return [cfg(d, lay, m) for m in _split(modes) for d in _split(dtypes) for lay in _split(layouts)]


# --------------------------------------------------------------------------- setup checks


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def load_convt(modes: set[str]):
    """Imports convt_op (building it if needed) and returns the op, or raises Unavailable.

    Runs the CUDA kernels once on a tiny problem (forward, and backward when a mode
    needs it), so that a broken install fails here with one clear line.
    """
    try:
        import convt_op
    except Exception as err:  # a build failure is printed by the build itself
        raise Unavailable(f"could not build or load the convt_op library ({_first_line(err)})") from None
    if not torch._C._dispatch_has_kernel_for_dispatch_key("convt::conv_transpose2d", "CUDA"):
        raise Unavailable("the convt_op library was built without CUDA kernels "
                          "(torch without CUDA, nvcc missing, or CONVT_OP_NO_CUDA=1)")
    backward = bool(set(modes) - {"fwd"})
    x = torch.randn(1, 2, 3, 3, device="cuda", requires_grad=backward)
    w = torch.randn(2, 2, 2, 2, device="cuda", requires_grad=backward)
    try:
        out = convt_op.conv_transpose2d(x, w, None, stride=2)
        if backward:
            out.sum().backward()
        torch.cuda.synchronize()
    except RuntimeError as err:
        raise Unavailable(f"the convt CUDA kernels failed on a tiny problem ({_first_line(err)})") from None
    return convt_op.conv_transpose2d


# --------------------------------------------------------------------------- timing


def _event_bench(fn, warmup_ms: float, rep_ms: float, grad_to_none=None) -> float:
    """Median ms of fn over CUDA events, like triton.testing.do_bench: estimate one
    call, warm up for ~warmup_ms, then time ~rep_ms worth of calls one by one with
    the L2 cache flushed (and grads cleared) outside each timed region."""
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    n_warmup = max(1, int(warmup_ms / estimate))
    n_repeat = max(1, int(rep_ms / estimate))
    for _ in range(n_warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for s, e in zip(starts, ends):
        for t in grad_to_none or ():
            t.grad = None
        flush.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def make_timer(warmup_ms: float, rep_ms: float):
    """(fn, grad_to_none) -> median milliseconds, and the timer's name."""
    try:
        from triton.testing import do_bench
    except Exception:
        return (lambda fn, grads=None: _event_bench(fn, warmup_ms, rep_ms, grads)), "cuda-events"

    def timer(fn, grads=None):
        return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, grad_to_none=grads, return_mode="median"))

    return timer, "triton.testing.do_bench"


@contextlib.contextmanager
def tf32_enabled(enabled: bool):
    """allow_tf32 for convolutions (cuDNN's and convt's) and for matmuls, restored after."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer torch nudges towards fp32_precision
        old = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
        torch.backends.cudnn.allow_tf32 = enabled
        torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def measure_copy_bandwidth(timer, nbytes: int = 1 << 30) -> float:
    """Bytes per second of a device-to-device copy, counting bytes read plus written."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (ms * 1e-3)


def rate_key(dtype: str, tf32: bool | None) -> str:
    return f"{dtype}_tf32" if dtype == "float32" and tf32 else dtype


def measure_matmul_rate(timer, dtype: str, tf32: bool | None, n: int = 8192) -> float:
    """FLOP/s of an n^3 matmul on random data: the tensor-core (or fp32/fp64) rate."""
    a = torch.randn(n, n, device="cuda", dtype=DTYPES[dtype])
    b = torch.randn(n, n, device="cuda", dtype=DTYPES[dtype])
    with tf32_enabled(bool(tf32)):
        ms = timer(lambda: a @ b)
    del a, b
    return 2 * n**3 / (ms * 1e-3)


# --------------------------------------------------------------------------- one case


def make_inputs(shape: Shape, cfg: Config, seed: int, device: str = "cuda"):
    """Random input, weight (scaled like nn init), bias and grad_output on the device."""
    dtype = DTYPES[cfg.dtype]
    gen = torch.Generator(device=device).manual_seed(seed)
    gdtype = torch.float64 if dtype == torch.float64 else torch.float32

    def randn(*size, scale=1.0):
        t = torch.randn(size, generator=gen, device=device, dtype=gdtype)
        if scale != 1.0:
            t.mul_(scale)
        return t.to(dtype)

    fan = shape.Cin // shape.groups * shape.kernel[0] * shape.kernel[1]
    x = randn(shape.N, shape.Cin, shape.H, shape.W)
    w = randn(shape.Cin, shape.Cout // shape.groups, *shape.kernel, scale=fan**-0.5)
    b = randn(shape.Cout) if shape.bias else None
    go = None
    if cfg.mode != "fwd":
        go = randn(shape.N, shape.Cout, *shape.out_hw)
    if cfg.layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
        if go is not None:
            go = go.contiguous(memory_format=torch.channels_last)
    return x, w, b, go


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64, chunked along dim 0 to bound the extra memory."""
    if ref.numel() == 0:
        return 0.0
    per_item = max(1, ref[0].numel() if ref.dim() > 0 else 1)
    step = max(1, (1 << 26) // per_item)
    num = torch.zeros((), dtype=torch.float64, device=ref.device)
    den = torch.zeros((), dtype=torch.float64, device=ref.device)
    for o, r in zip(out.split(step), ref.split(step)):
        num += (o.to(torch.float64) - r).square().sum()
        den += r.square().sum()
    return (num.sqrt() / den.sqrt().clamp_min(1e-300)).item()


def _poisoned_run(run):
    """Runs ``run() -> list of tensors`` on output memory pre-filled with NaN.

    The first run's results are filled with NaN and freed, so that the second run's
    allocations (same sizes, same order, same stream) get the same blocks back from
    the caching allocator; any element the kernel then leaves unwritten reads NaN and
    fails the error check. Returns (results, poisoned): poisoned says whether every
    result really landed on a poisoned block (retried once if not)."""
    for _ in range(2):
        ptrs = _poison_and_free(run())  # no reference survives: the blocks return to the pool
        results = run()
        if {t.data_ptr() for t in results if t is not None and t.numel()} == ptrs:
            return results, True
        del results
    return run(), False


def _poison_and_free(results) -> set[int]:
    ptrs = set()
    for t in results:
        if t is not None and t.numel():
            t.detach().fill_(float("nan"))
            ptrs.add(t.data_ptr())
    return ptrs


def _same_memory_format(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Both contiguous, both channels_last, or neither, alike."""
    return (a.is_contiguous(memory_format=torch.channels_last) == b.is_contiguous(memory_format=torch.channels_last)
            and a.is_contiguous() == b.is_contiguous())


def convt_backward(go, x, w, mask, *, stride, padding, output_padding, groups, dilation):
    """convt's backward operator alone (what autograd calls), for the grad modes."""
    return torch.ops.convt.conv_transpose2d_backward(
        go, x, w, list(stride), list(padding), list(output_padding), groups, list(dilation), mask)


def pytorch_backward(go, x, w, mask, *, stride, padding, output_padding, groups, dilation):
    """PyTorch's transposed-convolution backward alone (cuDNN's data / filter gradient kernels)."""
    return torch.ops.aten.convolution_backward(
        go, x, w, None, list(stride), list(padding), list(dilation), True, list(output_padding), groups, mask)


def backward_of(op):
    """The backward operator that goes with a forward under test (--impl pytorch: PyTorch's)."""
    return pytorch_backward if op is F.conv_transpose2d else convt_backward


def _grad_mask(mode: str) -> list[bool]:
    return [i == GRAD_MODES[mode] for i in range(3)]


def _check_grad_mode(op, shape: Shape, cfg: Config, x, w, go) -> dict:
    """One gradient from the backward operator alone: ours, PyTorch's, float64 PyTorch."""
    kw, i, mask = shape.conv_kwargs(), GRAD_MODES[cfg.mode], _grad_mask(cfg.mode)
    ours, poisoned = _poisoned_run(lambda: [backward_of(op)(go, x, w, mask, **kw)[i]])
    theirs = pytorch_backward(go, x, w, mask, **kw)[i]
    up = lambda t: t.detach().to(torch.float64)  # noqa: E731
    ref = pytorch_backward(up(go), up(x), up(w), mask, **kw)[i]
    errors, torch_errors = {cfg.mode: rel_error(ours[0], ref)}, {cfg.mode: rel_error(theirs, ref)}
    return {"errors": errors, "pytorch_errors": torch_errors, "poisoned": poisoned,
            "layout_matches": _same_memory_format(ours[0], theirs)}


def check_case(op, shape: Shape, cfg: Config, x, w, b, go) -> dict:
    """Errors of ours and of PyTorch against float64 PyTorch on the same inputs."""
    if cfg.mode in GRAD_MODES:
        return _check_grad_mode(op, shape, cfg, x, w, go)
    kw = shape.conv_kwargs()
    up = lambda t: None if t is None else t.detach().to(torch.float64)  # noqa: E731
    names = ["output"] + (["grad_input", "grad_weight"] + (["grad_bias"] if b is not None else [])
                          if cfg.mode == "fwdbwd" else [])

    def run_with(fn):
        def run():
            if cfg.mode == "fwd":
                with torch.no_grad():
                    return [fn(x, w, b, **kw)]
            leaves = [t.detach().requires_grad_() for t in (x, w, b) if t is not None]
            out = fn(*leaves, *([None] if b is None else []), **kw)
            grads = torch.autograd.grad(out, leaves, go)
            return [out.detach(), *grads]
        return run

    ours, poisoned = _poisoned_run(run_with(op))
    theirs = run_with(F.conv_transpose2d)()

    # float64 reference; freed tensor by tensor to keep the peak down.
    leaves64 = [up(t).requires_grad_(cfg.mode == "fwdbwd") for t in (x, w, b) if t is not None]
    ref_out = F.conv_transpose2d(*leaves64, *([None] if b is None else []), **kw)
    refs = [ref_out.detach()]
    if cfg.mode == "fwdbwd":
        refs += list(torch.autograd.grad(ref_out, leaves64, up(go)))
    del ref_out, leaves64
    errors, torch_errors = {}, {}
    for name, o, t, r in zip(names, ours, theirs, refs):
        errors[name] = rel_error(o, r)
        torch_errors[name] = rel_error(t, r)
    return {"errors": errors, "pytorch_errors": torch_errors, "poisoned": poisoned,
            "layout_matches": _same_memory_format(ours[0], theirs[0])}


# --repeat auto: cases where either side's first round is under AUTO_REPEAT_BELOW_MS get
# AUTO_REPEAT_ROUNDS rounds in all. Those are the noisy ones (unet_up4 bf16 channels_last
# training read 0.535 ms in one single-round run and 0.300 with three rounds, H100 runs FF
# and FG), and three more rounds of a sub-millisecond case cost little.
AUTO_REPEAT_BELOW_MS = 1.0
AUTO_REPEAT_ROUNDS = 3


def rounds_for(repeat: int | str, first_round_ms: float) -> int:
    """How many rounds a case gets: `repeat` itself, or under "auto" one round, or
    AUTO_REPEAT_ROUNDS where the first round's faster side took under AUTO_REPEAT_BELOW_MS."""
    if repeat != "auto":
        return int(repeat)
    return AUTO_REPEAT_ROUNDS if first_round_ms < AUTO_REPEAT_BELOW_MS else 1


def _case_fns(op, shape: Shape, cfg: Config, x, w, b, go):
    """The calls one case times: (ours, PyTorch's, the leaves whose grads are cleared before
    each call or None, the context to run them in). fwdbwd makes x, w, b require grad: the
    caller turns that off again (time_case, device_times)."""
    kw = shape.conv_kwargs()
    leaves = None
    context = contextlib.nullcontext
    if cfg.mode in GRAD_MODES:
        mask, ours_bwd = _grad_mask(cfg.mode), backward_of(op)
        ours_fn = lambda: ours_bwd(go, x, w, mask, **kw)  # noqa: E731
        theirs_fn = lambda: pytorch_backward(go, x, w, mask, **kw)  # noqa: E731
    elif cfg.mode == "fwd":
        context = torch.no_grad
        ours_fn = lambda: op(x, w, b, **kw)  # noqa: E731
        theirs_fn = lambda: F.conv_transpose2d(x, w, b, **kw)  # noqa: E731
    else:
        # .backward(go) with the grads set to None before each call (outside the timed
        # region): autograd then stores the fresh gradient instead of accumulating.
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        ours_fn = lambda: op(x, w, b, **kw).backward(go)  # noqa: E731
        theirs_fn = lambda: F.conv_transpose2d(x, w, b, **kw).backward(go)  # noqa: E731
    return ours_fn, theirs_fn, leaves, context


def _release(leaves) -> None:
    for t in leaves or ():
        t.grad = None
        t.requires_grad_(False)


def time_case(op, timer, shape: Shape, cfg: Config, x, w, b, go,
              repeat: int | str = 1) -> tuple[list[float], list[float]]:
    """Our and PyTorch's times (the timer's median ms), `repeat` of each (an int, or "auto":
    rounds_for), interleaved: one round times ours then PyTorch's, the next the other way
    round. A drift of the machine during the case (clocks, host load, other tenants: the
    small host-bound steps moved 2-3x between runs) then reaches both sides alike, and the
    spread of the per-round ratios says how far one round can be trusted."""
    ours_fn, theirs_fn, leaves, context = _case_fns(op, shape, cfg, x, w, b, go)
    ours: list[float] = []
    theirs: list[float] = []
    try:
        with context():
            i, rounds = 0, 1
            while i < rounds:
                order = [(ours, ours_fn), (theirs, theirs_fn)]
                for times, fn in (order if i % 2 == 0 else order[::-1]):
                    times.append(timer(fn, leaves))
                if i == 0:
                    rounds = rounds_for(repeat, min(ours[0], theirs[0]))
                i += 1
    finally:
        _release(leaves)
    return ours, theirs


DEVICE_TIME_CALLS = 10  # calls per side under the profiler (--device-time)


def device_ms_per_call(events, calls: int) -> float:
    """Device milliseconds per call from profiler events (torch.profiler, CUDA activity): the
    sum of every event's device time (kernels, memsets, copies) over `calls` calls."""
    total_us = sum(getattr(e, "device_time_total", 0) or 0 for e in events)
    return total_us / calls / 1e3


def device_times(op, shape: Shape, cfg: Config, x, w, b, go, calls: int = DEVICE_TIME_CALLS) -> tuple[float, float]:
    """Our and PyTorch's device time per call (ms, warm L2, no flush), from the profiler's CUDA
    events over `calls` calls each (--device-time). Beside the timer's medians it tells the
    host-bound rows: there the timed call waits for the host to launch its kernels, and the
    medians move 2-3x between machines while the device time stays put (run SH: dcgan_g2
    float32 training 185 us of device time, 349-727 us timed)."""
    from torch.profiler import ProfilerActivity, profile

    ours_fn, theirs_fn, leaves, context = _case_fns(op, shape, cfg, x, w, b, go)
    out = []
    try:
        with context():
            for fn in (ours_fn, theirs_fn):
                fn()  # outside the profile: lazy initialisation, plan caches
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(calls):
                        for t in leaves or ():
                            t.grad = None
                        fn()
                    torch.cuda.synchronize()
                out.append(device_ms_per_call(prof.key_averages(), calls))
    finally:
        _release(leaves)
    return out[0], out[1]


HOST_TIME_ROUNDS = 3  # rounds per side, interleaved (--host-time)
HOST_TIME_CALLS = 20  # calls per round
HOST_TIME_BELOW_MS = 1.0  # rows whose faster side's timed median is below this: where host time can bound them
HOST_TIME_SLEEP_CYCLES = 100_000_000  # the busy kernel before each round: ~55 ms at 1.8 GHz


def _keep_gpu_busy() -> None:
    torch.cuda._sleep(HOST_TIME_SLEEP_CYCLES)


def host_us_per_call(fn, leaves, calls: int, busy=_keep_gpu_busy, sync=torch.cuda.synchronize) -> float:
    """Median host microseconds of `calls` calls of fn, issued while a sleep kernel keeps the GPU
    busy, so that no call waits for the device: what the host spends launching one call. The
    grads of `leaves` are cleared before each call, outside the timed region."""
    busy()
    times = []
    for _ in range(calls):
        for t in leaves or ():
            t.grad = None
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    sync()
    return statistics.median(times) * 1e6


def host_times(op, shape: Shape, cfg: Config, x, w, b, go, rounds: int = HOST_TIME_ROUNDS,
               calls: int = HOST_TIME_CALLS, busy=_keep_gpu_busy, sync=torch.cuda.synchronize) -> tuple[float, float]:
    """Our and PyTorch's host microseconds per call (--host-time): the median over `rounds`
    rounds, ours first in even rounds and PyTorch's first in odd ones, as time_case does (this
    host's time per call moved ~30% between processes; in one process both sides see the same
    host). Where the timed medians sit above the device times, these say which side's host time
    bounds the row (run AA10, dcgan_g2 float32 training: 481 us of our host time per step against
    PyTorch's 305)."""
    ours_fn, theirs_fn, leaves, context = _case_fns(op, shape, cfg, x, w, b, go)
    ours: list[float] = []
    theirs: list[float] = []
    try:
        with context():
            for fn in (ours_fn, theirs_fn):
                fn()  # lazy initialisation, plan caches
            sync()
            order = [(ours, ours_fn), (theirs, theirs_fn)]
            for i in range(rounds):
                for times, fn in (order if i % 2 == 0 else order[::-1]):
                    times.append(host_us_per_call(fn, leaves, calls, busy, sync))
    finally:
        _release(leaves)
    return statistics.median(ours), statistics.median(theirs)


def timing_fields(ours: list[float], theirs: list[float], floor_ms: float) -> dict:
    """A row's timing columns from the rounds of time_case: medians, the speedup of the
    medians, percent of floor, and (several rounds) the per-round ratios' range."""
    o, t = statistics.median(ours), statistics.median(theirs)
    ratios = [b / a for a, b in zip(ours, theirs)]
    return {"ours_ms": o, "pytorch_ms": t, "speedup": t / o,
            "ours_pct_floor": 100 * floor_ms / o, "pytorch_pct_floor": 100 * floor_ms / t,
            "ours_ms_rounds": ours, "pytorch_ms_rounds": theirs,
            "speedup_range": [min(ratios), max(ratios)] if len(ratios) > 1 else None}


def run_case(op, timer, shape: Shape, cfg: Config, env: dict, seed: int, repeat: int | str = 1,
             device_time: bool = False, host_time: bool = False) -> dict:
    row = {"shape": shape.name, "dtype": cfg.dtype, "layout": cfg.layout, "mode": cfg.mode, "tf32": cfg.tf32,
           "flops": shape.flops(cfg.mode), "min_bytes": shape.min_bytes(DTYPES[cfg.dtype], cfg.mode),
           "tolerance": cfg.tolerance, "status": "ok"}
    bw = env["copy_bandwidth_Bps"]
    rate = env["matmul_flops"][rate_key(cfg.dtype, cfg.tf32)]
    floor_s = max(row["min_bytes"] / bw, row["flops"] / rate)
    row["floor_ms"] = floor_s * 1e3
    tensors = ()
    try:
        with tf32_enabled(bool(cfg.tf32)):
            tensors = make_inputs(shape, cfg, seed)
            check = check_case(op, shape, cfg, *tensors)
            row.update(check)
            row["rel_err"] = max(check["errors"].values())
            row["pytorch_rel_err"] = max(check["pytorch_errors"].values())
            torch.cuda.empty_cache()
            bad = [f"{k} {v:.2e}" for k, v in check["errors"].items() if not v <= cfg.tolerance]
            if bad:
                row["status"] = f"FAIL: rel error {', '.join(bad)} > tol {cfg.tolerance:.0e}"
            else:
                if not check["layout_matches"]:
                    row["note"] = "output memory format differs from F.conv_transpose2d's"
                    print(f"convt_op bench: {shape.name} {cfg.label}: note: {row['note']}", file=sys.stderr)
                ours, theirs = time_case(op, timer, shape, cfg, *tensors, repeat=repeat)
                row.update(timing_fields(ours, theirs, row["floor_ms"]))
                if device_time:
                    row["ours_device_ms"], row["pytorch_device_ms"] = device_times(op, shape, cfg, *tensors)
                if host_time and min(row["ours_ms"], row["pytorch_ms"]) < HOST_TIME_BELOW_MS:
                    row["ours_host_us"], row["pytorch_host_us"] = host_times(op, shape, cfg, *tensors)
    except torch.cuda.OutOfMemoryError:
        row["status"] = "OOM"
    except Exception as err:  # report and go on with the next case
        row["status"] = f"error: {_first_line(err)}"
    finally:
        del tensors
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return row


# --------------------------------------------------------------------------- reporting


class Progress:
    """One status line on stderr: rewritten in place on a terminal, one line per case in logs."""

    def __init__(self, total: int):
        self.total, self.start, self.tty = total, time.time(), sys.stderr.isatty()

    def update(self, done: int, label: str) -> None:
        width = 24
        filled = width * done // max(self.total, 1)
        bar = "#" * filled + "." * (width - filled)
        line = f"[{bar}] {done}/{self.total} {time.time() - self.start:5.0f}s {label}"
        if self.tty:
            print("\r" + line[:150].ljust(150), end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def _range(pair) -> str:
    return "-" if not pair else f"{pair[0]:.2f}-{pair[1]:.2f}"


def markdown_table(rows: list[dict]) -> str:
    """The per-case table; with device times (--device-time) two more columns after PyTorch's ms,
    and with host times (--host-time) two more after those."""
    dev = any("ours_device_ms" in r for r in rows)
    host = any("ours_host_us" in r for r in rows)
    head = ("| shape | dtype | tf32 | layout | mode | ours ms | pytorch ms "
            + ("| ours device ms | pytorch device ms " if dev else "")
            + ("| ours host us | pytorch host us " if host else "")
            + "| speedup | speedup range | floor ms | ours % floor | pytorch % floor | max rel err | pytorch rel err "
            "| status |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        tf = "-" if r["tf32"] is None else ("on" if r["tf32"] else "off")
        dev_cells = (f"| {_fmt(r.get('ours_device_ms'), '.3f')} | {_fmt(r.get('pytorch_device_ms'), '.3f')} "
                     if dev else "")
        if host:
            dev_cells += f"| {_fmt(r.get('ours_host_us'), '.0f')} | {_fmt(r.get('pytorch_host_us'), '.0f')} "
        lines.append(
            f"| {r['shape']} | {r['dtype']} | {tf} | {r['layout']} | {r['mode']} | {_fmt(r.get('ours_ms'), '.3f')} "
            f"| {_fmt(r.get('pytorch_ms'), '.3f')} {dev_cells}| {_fmt(r.get('speedup'), '.2f')} "
            f"| {_range(r.get('speedup_range'))} "
            f"| {_fmt(r.get('floor_ms'), '.3f')} "
            f"| {_fmt(r.get('ours_pct_floor'), '.0f')} | {_fmt(r.get('pytorch_pct_floor'), '.0f')} "
            f"| {_fmt(r.get('rel_err'), '.1e')} | {_fmt(r.get('pytorch_rel_err'), '.1e')} | {r['status']} |"
        )
    return "\n".join(lines)


def write_markdown(path: Path, env: dict, rows: list[dict]) -> None:
    rates = ", ".join(f"{k} {v / 1e12:.0f}" for k, v in env["matmul_flops"].items())
    text = (
        f"# convt_op bench, {env['date']}\n\n"
        f"{env['device']}; torch {env['torch']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}; "
        f"ours: {env['impl']}; timer: {env['timer']} (median).\n"
        f"Measured: copy {env['copy_bandwidth_Bps'] / 1e12:.2f} TB/s (read+write); matmul TFLOP/s: {rates}.\n"
        "speedup = pytorch ms / ours ms (medians; with --repeat, the range of the per-round ratios beside it); "
        "% floor = floor / time * 100; "
        "rel err: relative Frobenius error against PyTorch in float64 (max over output and gradients).\n\n"
        + summary_markdown(summarize(rows)) + "\n\n"
        + markdown_table(rows) + "\n"
    )
    path.write_text(text)


def write_plot(path: Path, rows: list[dict]) -> str | None:
    """speedup.png: speedup and % of floor per shape, one bar per config. None if skipped."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return "matplotlib is not installed: skipping speedup.png (pip install matplotlib)"
    timed = [r for r in rows if r.get("speedup") is not None]
    if not timed:
        return "no timed case: skipping speedup.png"
    label = lambda r: config_label(config_key(r))  # noqa: E731
    configs = list(dict.fromkeys(label(r) for r in timed))
    shapes = list(dict.fromkeys(r["shape"] for r in timed))
    by = {(r["shape"], label(r)): r for r in timed}
    width = 0.8 / len(configs)
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 0.7 * len(shapes) * max(1, len(configs) / 2)), 9), sharex=True)
    for i, c in enumerate(configs):
        xs = [j + (i - (len(configs) - 1) / 2) * width for j in range(len(shapes))]
        get = lambda key: [by[(s, c)][key] if (s, c) in by else 0 for s in shapes]  # noqa: E731
        axes[0].bar(xs, get("speedup"), width, label=c)
        axes[1].bar(xs, get("ours_pct_floor"), width, label=f"ours {c}")
        axes[1].scatter(xs, get("pytorch_pct_floor"), marker="_", color="black", s=60,
                        label="pytorch" if i == 0 else None, zorder=3)
    axes[0].axhline(1.0, color="gray", lw=0.8)
    axes[0].set_ylabel("speedup vs PyTorch (x)")
    axes[0].legend(fontsize=7)
    axes[1].set_ylabel("% of floor (bars: ours, dashes: PyTorch)")
    axes[1].axhline(100, color="gray", lw=0.8)
    axes[1].set_xticks(range(len(shapes)), shapes, rotation=45, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def environment(timer_name: str, impl: str) -> dict:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": props.name,
        "sm_count": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "timer": timer_name,
        "impl": impl,
    }


# --------------------------------------------------------------------------- main


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m convt_op bench", description="convt vs PyTorch on the suite")
    p.add_argument("--shapes", default=None, help="comma list of suite names or substrings (default: all)")
    p.add_argument("--dtypes", default="float32", help="comma list of float32,bfloat16,float16,float64")
    p.add_argument("--layouts", default="nchw", help="comma list of nchw,channels_last")
    p.add_argument("--mode", default="fwd",
                   help="comma list of fwd, fwdbwd, grad_input, grad_weight (the last two: one backward "
                        "kernel alone, against aten.convolution_backward with the same output_mask)")
    p.add_argument("--configs", default=None,
                   help="explicit dtype:layout:mode list, e.g. float32:nchw:fwd,bfloat16:nchw:fwdbwd "
                        "(overrides --dtypes/--layouts/--mode); 'record': the 11 configurations of a "
                        "benchmark of record; 'kernels': each backward kernel alone (float32, bfloat16; "
                        "both layouts; grad_input, grad_weight), issue 6's per-kernel floor target")
    p.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True,
                   help="float32 with TF32 (PyTorch's default for convolutions) or strict fp32")
    p.add_argument("--out", default=None, help="folder for results.json, results.md, speedup.png")
    p.add_argument("--warmup", type=float, default=25, help="warm-up per timing, ms (do_bench's meaning)")
    p.add_argument("--rep", type=float, default=100, help="timed repetitions per timing, ms")
    p.add_argument("--repeat", default="auto",
                   help="rounds per case, ours and PyTorch's interleaved (alternating which goes first); "
                        "the medians are reported with the per-round speedup range. 'auto' (default): "
                        f"{AUTO_REPEAT_ROUNDS} rounds where the first round's faster side took under "
                        f"{AUTO_REPEAT_BELOW_MS:g} ms (the small, noisy cases), else one")
    p.add_argument("--impl", choices=("convt", "pytorch"), default="convt",
                   help="'pytorch' times F.conv_transpose2d against itself: a harness check")
    p.add_argument("--device-time", action="store_true",
                   help=f"also report each side's device time per call (the profiler's CUDA events over "
                        f"{DEVICE_TIME_CALLS} calls, warm L2): where the timed medians far exceed it, the row "
                        "measures the host (the small training steps)")
    p.add_argument("--host-time", action="store_true",
                   help=f"also report each side's host time per call (median over {HOST_TIME_ROUNDS} interleaved "
                        f"rounds of {HOST_TIME_CALLS} calls issued behind a sleep kernel), for rows whose faster "
                        f"side's timed median is under {HOST_TIME_BELOW_MS:g} ms: where host time bounds a row, "
                        "whose host it is")
    p.add_argument("--list", action="store_true", help="list the suite and exit")
    args = p.parse_args(argv)
    if args.repeat != "auto":
        try:
            args.repeat = int(args.repeat)
        except ValueError:
            p.error(f"--repeat must be 'auto' or a whole number, not {args.repeat!r}")
        if args.repeat < 1:
            p.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return _main(args)
    except Unavailable as err:
        print(f"convt_op bench: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nconvt_op bench: interrupted", file=sys.stderr)
        return 130


def _main(args) -> int:
    suite = load_suite()
    if args.list:
        for s in suite:
            print(f"{s.name:20s} N={s.N} Cin={s.Cin} Cout={s.Cout} HxW={s.H}x{s.W} k={s.kernel} s={s.stride} "
                  f"p={s.padding} op={s.output_padding} d={s.dilation} g={s.groups} bias={s.bias}")
        return 0
    shapes = select_shapes(suite, _split(args.shapes))
    configs = make_configs(args.dtypes, args.layouts, args.mode, args.tf32, args.configs)
    if not torch.cuda.is_available():
        raise Unavailable("no CUDA GPU here (torch.cuda.is_available() is False); the benchmark needs one")
    modes = {c.mode for c in configs}
    op = F.conv_transpose2d if args.impl == "pytorch" else load_convt(modes)
    impl = "F.conv_transpose2d (harness check)" if args.impl == "pytorch" else "convt"

    timer, timer_name = make_timer(args.warmup, args.rep)
    env = environment(timer_name, impl)
    env["repeat"] = args.repeat
    print(f"convt_op bench: {env['device']}, torch {env['torch']}, timer {timer_name}; measuring copy "
          "bandwidth and matmul rates ...", file=sys.stderr, flush=True)
    env["copy_bandwidth_Bps"] = measure_copy_bandwidth(timer)
    env["matmul_flops"] = {}
    for c in configs:
        key = rate_key(c.dtype, c.tf32)
        if key not in env["matmul_flops"]:
            env["matmul_flops"][key] = measure_matmul_rate(timer, c.dtype, c.tf32)
    torch.cuda.empty_cache()

    cases = [(s, c) for c in configs for s in shapes]
    progress = Progress(len(cases))
    rows = []
    interrupted = False
    try:
        for i, (shape, cfg) in enumerate(cases):
            progress.update(i, f"{shape.name} {cfg.label}")
            row = run_case(op, timer, shape, cfg, env, seed=zlib.crc32(shape.name.encode()), repeat=args.repeat,
                           device_time=args.device_time, host_time=args.host_time)
            rows.append(row)
            if row["status"] != "ok":
                progress.close()
                print(f"convt_op bench: {shape.name} {cfg.label}: {row['status']}", file=sys.stderr, flush=True)
        progress.update(len(cases), "done")
    except KeyboardInterrupt:  # e.g. timeout -s INT: still write what was measured
        interrupted = True
        env["interrupted_after_cases"] = len(rows)
    progress.close()

    table = markdown_table(rows)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps({"environment": env, "rows": rows}, indent=1) + "\n")
        write_markdown(out / "results.md", env, rows)
        note = write_plot(out / "speedup.png", rows)
        if note:
            print(f"convt_op bench: {note}", file=sys.stderr)
        print(f"convt_op bench: wrote {out}/results.json, results.md"
              + ("" if note else ", speedup.png"), file=sys.stderr)
    rates = ", ".join(f"{k} {v / 1e12:.0f}" for k, v in env["matmul_flops"].items())
    print(f"\n{env['device']} | ours: {impl} | copy {env['copy_bandwidth_Bps'] / 1e12:.2f} TB/s | "
          f"matmul TFLOP/s: {rates}\n")
    print(table)
    failed = [r for r in rows if r["status"] != "ok"]
    if interrupted:
        print(f"\nconvt_op bench: interrupted after {len(rows)} of {len(cases)} cases", file=sys.stderr)
        return 130
    if failed:
        print(f"\nconvt_op bench: {len(failed)} of {len(rows)} cases did not pass (see status)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
