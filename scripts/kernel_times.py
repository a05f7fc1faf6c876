"""Device time per kernel per step (torch.profiler, CUDA activity), ours and PyTorch, plus the
event-timed wall time per step of an unsynchronized loop of 20 (host-bound when wall > device).

usage (GPU machine, repository root): python scripts/kernel_times.py shape:dtype:layout:mode ...
  shape: a suite name (convt_op/bench_suite.json); dtype: float32 | float32strict | bfloat16 | float16;
  layout: nchw | channels_last; mode: fwd | fwdbwd. float32 runs with TF32 on, as the benchmark;
  float32strict with it off (bench --no-tf32).
  KT_OURS_ONLY=1: skip PyTorch's rows (sweeps of a knob).
"""
import os, sys, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
from torch.profiler import profile, ProfilerActivity
op = convt_op.conv_transpose2d
shapes = {s.name: s for s in B.load_suite()}
for spec in sys.argv[1:]:
    name, dt, lay, mode = spec.split(":")
    strict = dt == "float32strict"
    dt = "float32" if strict else dt
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, mode, (not strict) if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32" and not strict):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None] if mode == "fwdbwd" else []
        whos = (("ours", op),) + (() if os.environ.get("KT_OURS_ONLY") else (("pytorch", F.conv_transpose2d),))
        for who, fn in whos:
            def f():
                for t in leaves: t.grad = None
                y = fn(x, w, b, **kw)
                if mode == "fwdbwd": y.backward(go)
            for _ in range(10): f()
            torch.cuda.synchronize()
            n = 20
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(n): f()
            e1.record(); torch.cuda.synchronize()
            wall = e0.elapsed_time(e1) / n * 1000
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                for _ in range(n): f()
                torch.cuda.synchronize()
            ev = [e for e in p.key_averages() if e.device_time_total > 0]
            ev.sort(key=lambda e: -e.device_time_total)
            dev = sum(e.device_time_total for e in ev) / n
            print(f"## {spec} {who}: wall {wall:.0f} us/step, device {dev:.0f} us/step")
            for e in ev[:8]:
                print(f"   {e.device_time_total/n:8.1f} us x{e.count/n:.0f}  {e.key[:110]}")
        for t in leaves: t.grad = None; t.requires_grad_(False)
