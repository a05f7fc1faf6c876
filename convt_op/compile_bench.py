"""``python -m convt_op.compile_bench --out DIR``: whole decoders, eager and compiled, with and without convt.

For the two decoders of ``python -m convt_op demo`` (convt_op/demo.py: the DCGAN
generator, z -> 3 x 64 x 64, batch 128; the UNet up path, 1024 x 8 x 8 ->
2 x 128 x 128, batch 16), in float32 (TF32 as PyTorch sets it by default for
convolutions) and bfloat16 (model and input), for inference (eval, no_grad)
and a training step (train mode, forward + backward of a weighted sum), it
times four implementations:

  eager           the model as PyTorch ships it (cuDNN transposed convs)
  eager_convt     the same after convt_op.convert(model)
  inductor        torch.compile(model): Inductor, which calls cuDNN for convolutions
  inductor_convt  torch.compile(model, backend=convt_op.compile.convt_backend), i.e.
                  backend="convt" (--way enable: convt_op.enable() + default Inductor)

Before timing, each implementation's output (and, for training, its parameter
gradients) is compared with the model run by PyTorch in float64 on the same
(rounded) weights and input: relative Frobenius error <= max(1e-2 float32 /
3e-2 bfloat16, 4 x eager PyTorch's own error). One call under the profiler
counts how often the convt ops are entered (the convt implementations must
call them, the others must not). A row that fails is reported and not timed.

Times are medians over CUDA events (``triton.testing.do_bench`` when triton is
importable, else convt_op.bench's equivalent loop; both flush L2 and clear the
gradients outside the timed region); "compile s" is the first call's wall time.

Writes results.json and results.md (device, torch/CUDA/cuDNN versions, date,
TF32 settings) into --out and prints the Markdown table last. Exit status 0 all
good, 1 a check failed or a row errored, 2 nothing could run (no GPU or no CUDA
kernels: a one-line message). --budget-s stops starting new rows once the run
has taken that long (the rest are listed as skipped).

Debug only: ``--device cpu --tiny`` runs the same logic on the CPU with shrunken
models and CPU substitution opted in (timings by perf_counter, meaningless).
"""

from __future__ import annotations

import argparse
import copy
import datetime as _dt
import json
import platform
import statistics
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from .demo import DCGANGenerator, UNetUpPath

IMPLS = ("eager", "eager_convt", "inductor", "inductor_convt")
IMPL_TITLES = {
    "eager": "eager",
    "eager_convt": "eager+convert",
    "inductor": "Inductor",
    "inductor_convt": "Inductor+convt",
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
MODES = ("infer", "train")
TOLERANCE = {torch.float32: 1e-2, torch.bfloat16: 3e-2}


@dataclass(frozen=True)
class ModelSpec:
    name: str
    make: Callable[[bool], nn.Module]  # tiny -> model
    batch: int
    tiny_batch: int


MODELS = {
    "dcgan": ModelSpec("dcgan", lambda tiny: DCGANGenerator(nz=16, ngf=8) if tiny else DCGANGenerator(), 128, 2),
    "unet": ModelSpec("unet", lambda tiny: UNetUpPath(base=8, depth=2) if tiny else UNetUpPath(), 16, 2),
}


class Unavailable(Exception):
    """Nothing can be benchmarked here; printed as one line (exit 2)."""


# --------------------------------------------------------------------------- pieces


def _log(start: float, msg: str) -> None:
    print(f"[{time.perf_counter() - start:6.1f}s] {msg}", file=sys.stderr, flush=True)


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:300]


def _relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.detach().double(), ref.detach().double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def _load(device: torch.device) -> None:
    """Imports convt_op and checks its kernels for the device; raises Unavailable."""
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise Unavailable("no CUDA GPU here (torch.cuda.is_available() is False); this benchmark needs one")
        from .bench import Unavailable as BenchUnavailable
        from .bench import load_convt

        try:
            load_convt({"fwd", "fwdbwd"})  # builds/loads and probes the kernels
        except BenchUnavailable as err:
            raise Unavailable(str(err)) from None
    else:
        import convt_op  # noqa: F401


def _make_timer(device: torch.device, warmup_ms: float, rep_ms: float):
    """(fn, grads_to_clear) -> median ms, and the timer's name."""
    if device.type == "cuda":
        from .bench import make_timer

        return make_timer(warmup_ms, rep_ms)

    def cpu_timer(fn, grads=None):  # debug runs only
        fn()
        times = []
        for _ in range(3):
            for t in grads or ():
                t.grad = None
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    return cpu_timer, "perf_counter (CPU debug run)"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _convt_calls(fn, device) -> int:
    """How many times one call of fn enters the dispatcher for a convt op."""
    with torch.profiler.profile() as prof:
        fn()
        _sync(device)
    return sum(e.name.startswith("convt::") for e in prof.events())


def _environment(device: torch.device, timer_name: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer torch nudges towards fp32_precision
        tf32 = {"cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32}
    env = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "python": platform.python_version(),
        "timer": timer_name,
        "tf32": tf32,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
    }
    return env


def _compiler(impl: str, way: str, device_types: tuple[str, ...]):
    """model -> callable for the implementation."""
    import convt_op
    from .compile import convt_backend

    def build(model: nn.Module):
        if impl == "eager":
            return model
        if impl == "eager_convt":
            return convt_op.convert(model)
        torch._dynamo.reset()  # a fresh compile per row: one model class is compiled many times here
        if impl == "inductor":
            return torch.compile(model, fullgraph=True)
        if way == "enable":
            convt_op.enable(device_types=device_types)
            return torch.compile(model, fullgraph=True)
        return torch.compile(model, backend=convt_backend, fullgraph=True, options={"device_types": device_types})

    return build


# --------------------------------------------------------------------------- one row


def run_row(spec: ModelSpec, dtype_name: str, mode: str, impls, args, device, timer, start) -> dict:
    """All implementations of one (model, dtype, mode): check, then time each."""
    import convt_op

    dtype = DTYPES[dtype_name]
    batch = spec.tiny_batch if args.tiny else spec.batch
    training = mode == "train"
    torch.manual_seed(0)
    base = spec.make(args.tiny).to(device=device, dtype=dtype)
    base.train(training)
    transposed_convs = sum(type(m) is nn.ConvTranspose2d for m in base.modules())
    x = base.example_input(batch, device).to(dtype)
    row = {"model": spec.name, "batch": batch, "dtype": dtype_name, "mode": mode, "impls": {}}

    # Training loss: a weighted sum with fixed random weights, so no two output elements weigh the same.
    loss_weights: dict = {}  # dtype -> weights; the float64 reference gets the low-precision values

    def forward_backward(fn):
        out = fn(x)
        if not loss_weights:
            w = torch.randn(out.shape, device=device, dtype=dtype)
            loss_weights.update({dtype: w, torch.float64: w.double()})
        (out * loss_weights[out.dtype]).sum().backward()
        return out

    # float64 reference on the same (rounded) weights and input.
    reference = copy.deepcopy(base).double()
    if training:
        out_ref = forward_backward(lambda t: reference(t.double()))
        grads_ref = [p.grad for p in reference.parameters()]
    else:
        with torch.no_grad():
            out_ref = reference(x.double())
        grads_ref = []
    reference = None  # free the float64 copy before timing

    eager_errors = None
    for impl in impls:
        result = {"status": "ok"}
        row["impls"][impl] = result
        label = f"{spec.name} b{batch} {dtype_name} {mode} {impl}"
        try:
            model = copy.deepcopy(base)
            fn = _compiler(impl, args.way, args.device_types)(model)
            params = list(model.parameters())

            def run():
                if training:
                    return forward_backward(fn)
                with torch.no_grad():
                    return fn(x)

            for p in params:
                p.grad = None
            t0 = time.perf_counter()
            out = run()
            _sync(device)
            result["first_call_s"] = time.perf_counter() - t0
            errors = [_relative_error(out, out_ref)] + [_relative_error(p.grad, g) for p, g in zip(params, grads_ref)]
            result["rel_err"] = max(errors)
            if impl == "eager":
                eager_errors = errors
            # Allowed: the dtype's tolerance, or 4x what eager PyTorch misses by (when eager ran first).
            limits = [max(TOLERANCE[dtype], 4 * e) for e in eager_errors] if eager_errors else \
                [TOLERANCE[dtype]] * len(errors)
            bad = [i for i, (e, lim) in enumerate(zip(errors, limits)) if not e <= lim]
            if bad:
                what = "output" if bad[0] == 0 else f"grad of parameter {bad[0] - 1}"
                result["status"] = f"FAIL: {what} relative error {errors[bad[0]]:.2e} > {limits[bad[0]]:.1e}"
            for p in params:
                p.grad = None
            result["convt_calls"] = _convt_calls(run, device)
            expected_calls = transposed_convs * (2 if training else 1) if impl.endswith("convt") else 0
            if result["status"] == "ok" and result["convt_calls"] != expected_calls:
                result["status"] = (f"FAIL: {result['convt_calls']} convt op calls per step, "
                                    f"expected {expected_calls}")
            if result["status"] == "ok":
                result["ms"] = timer(run, params if training else None)
            _log(start, f"{label}: first call {result['first_call_s']:.1f}s, rel err {result['rel_err']:.1e}, "
                        f"{result.get('ms', float('nan')):.3f} ms  [{result['status']}]")
        except Exception as err:  # one broken implementation must not hide the others' numbers
            result["status"] = f"ERROR: {_first_line(err)}"
            _log(start, f"{label}: {result['status']}")
            traceback.print_exc(file=sys.stderr)
        finally:
            if impl == "inductor_convt" and args.way == "enable":
                convt_op.disable()
            model = fn = None  # noqa: F841 (free memory before the next implementation)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    eager_ms = row["impls"].get("eager", {}).get("ms")
    inductor_ms = row["impls"].get("inductor", {}).get("ms")
    for impl, result in row["impls"].items():
        base_ms = inductor_ms if impl.startswith("inductor") else eager_ms
        if result.get("ms") and base_ms:
            result["speedup"] = base_ms / result["ms"]  # vs PyTorch's own kind (eager or Inductor)
    return row


# --------------------------------------------------------------------------- output


def markdown_table(rows: list[dict], impls) -> str:
    head = ["model", "batch", "dtype", "pass"] + [f"{IMPL_TITLES[i]} ms" for i in impls]
    if "eager" in impls and "eager_convt" in impls:
        head.append("convert vs eager")
    if "inductor" in impls and "inductor_convt" in impls:
        head.append("Inductor+convt vs Inductor")
    head += ["compile s (Ind / Ind+convt)", "max rel err", "status"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        res = r["impls"]
        fmt_ms = [f"{res[i]['ms']:.3f}" if res.get(i, {}).get("ms") else "-" for i in impls]
        cells = [r["model"], str(r["batch"]), r["dtype"], r["mode"]] + fmt_ms
        for pair in (("eager", "eager_convt"), ("inductor", "inductor_convt")):
            if all(p in impls for p in pair):
                s = res.get(pair[1], {}).get("speedup")
                cells.append(f"{s:.2f}x" if s else "-")
        comp = [res.get(i, {}).get("first_call_s") for i in ("inductor", "inductor_convt")]
        cells.append(" / ".join(f"{c:.0f}" if c is not None else "-" for c in comp))
        errs = [v["rel_err"] for v in res.values() if "rel_err" in v]
        cells.append(f"{max(errs):.1e}" if errs else "-")
        bad = [f"{i}: {v['status']}" for i, v in res.items() if v["status"] != "ok"]
        cells.append("; ".join(bad)[:200] if bad else (r.get("status") or "ok"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_results(out: Path, env: dict, rows: list[dict], impls) -> str:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"environment": env, "rows": rows}, indent=1) + "\n")
    table = markdown_table(rows, impls)
    tf32 = ", ".join(f"{k}={v}" for k, v in env["tf32"].items())
    md = [
        "# convt_op: decoders end to end, eager and torch.compile",
        "",
        f"{env['date']}; {env['device']}; torch {env['torch']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}, "
        f"Python {env['python']}; timer {env['timer']}; {tf32}; cudnn.benchmark={env['cudnn.benchmark']}; "
        f"compiled convt: {env['way']}.",
        "",
        "Median ms per call (infer: forward under no_grad, eval mode; train: forward + backward, train mode).",
        "Speedups: eager+convert vs eager, Inductor+convt vs Inductor. compile s: first call's wall time.",
        "",
        table,
        "",
    ]
    (out / "results.md").write_text("\n".join(md))
    return table


# --------------------------------------------------------------------------- main


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m convt_op.compile_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for results.json and results.md")
    p.add_argument("--models", default="dcgan,unet", help="comma list of dcgan,unet")
    p.add_argument("--dtypes", default="float32,bfloat16", help="comma list of float32,bfloat16")
    p.add_argument("--modes", default="infer,train", help="comma list of infer,train")
    p.add_argument("--impls", default=",".join(IMPLS), help=f"comma list of {','.join(IMPLS)}")
    p.add_argument("--way", choices=("backend", "enable"), default="backend",
                   help="how inductor_convt substitutes: the convt backend, or convt_op.enable()")
    p.add_argument("--warmup", type=float, default=25, help="warm-up per timing, ms (do_bench's meaning)")
    p.add_argument("--rep", type=float, default=100, help="timed repetitions per timing, ms")
    p.add_argument("--budget-s", type=float, default=170,
                   help="start no new row after this many seconds (the rest are listed as skipped)")
    p.add_argument("--device", default="cuda",
                   help="debug: 'cpu' runs the logic on the CPU (use with --tiny; timings meaningless)")
    p.add_argument("--tiny", action="store_true", help="debug: shrunken models and batch 2")
    args = p.parse_args(argv)

    def split(text, allowed, what):
        items = [s.strip() for s in text.split(",") if s.strip()]
        unknown = [s for s in items if s not in allowed]
        if unknown or not items:
            p.error(f"--{what}: unknown {unknown or 'empty'}; choose from {list(allowed)}")
        return items

    args.models = split(args.models, MODELS, "models")
    args.dtypes = split(args.dtypes, DTYPES, "dtypes")
    args.modes = split(args.modes, MODES, "modes")
    args.impls = [i for i in IMPLS if i in split(args.impls, IMPLS, "impls")]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return _main(args)
    except Unavailable as err:
        print(f"convt_op compile_bench: {err}", file=sys.stderr)
        return 2


def _main(args) -> int:
    start = time.perf_counter()
    device = torch.device(args.device)
    _load(device)
    args.device_types = (device.type,)
    timer, timer_name = _make_timer(device, args.warmup, args.rep)
    env = _environment(device, timer_name)
    env["way"] = "convt_op.enable()" if args.way == "enable" else 'backend "convt" (convt_op.compile.convt_backend)'
    _log(start, f"{env['device']}, torch {env['torch']}, CUDA {env['cuda']}; timer {timer_name}")

    plan = [(m, d, mode) for d in args.dtypes for mode in args.modes for m in args.models]
    rows = []
    interrupted = False
    try:
        for i, (model_name, dtype_name, mode) in enumerate(plan):
            spec = MODELS[model_name]
            if time.perf_counter() - start > args.budget_s:
                rows.append({"model": model_name, "batch": spec.tiny_batch if args.tiny else spec.batch,
                             "dtype": dtype_name, "mode": mode, "impls": {},
                             "status": f"skipped: time budget {args.budget_s:.0f}s spent"})
                continue
            _log(start, f"row {i + 1}/{len(plan)}: {model_name} {dtype_name} {mode}")
            rows.append(run_row(spec, dtype_name, mode, args.impls, args, device, timer, start))
    except KeyboardInterrupt:  # e.g. timeout -s INT: still write what was measured
        interrupted = True
        env["interrupted_after_rows"] = len(rows)

    env["total_s"] = round(time.perf_counter() - start, 1)
    table = write_results(Path(args.out), env, rows, args.impls)
    _log(start, f"wrote {args.out}/results.json, results.md")
    print(f"\n{env['device']} | torch {env['torch']} | CUDA {env['cuda']} | {env['date']}\n")
    print(table)
    failed = [r for r in rows for v in r["impls"].values() if v["status"] != "ok"]
    if interrupted:
        return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
