"""Every CPU-side op of one training step under the profiler (count per step, self CPU us per call), ours and
PyTorch, and a chrome trace of 3 of our steps per row ($OUT/trace_<row>.json) to map launches to kernels.
usage: python host_ops.py shape:dtype:layout ..."""
import os, sys, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
from torch.profiler import profile, ProfilerActivity
op = convt_op.conv_transpose2d
shapes = {s.name: s for s in B.load_suite()}
N = 20
for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        for who, fn in (("ours", op), ("pytorch", F.conv_transpose2d)):
            def f():
                for t in leaves: t.grad = None
                fn(x, w, b, **kw).backward(go)
            for _ in range(10): f()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                for _ in range(N): f()
                torch.cuda.synchronize()
            ev = [e for e in p.key_averages() if e.self_cpu_time_total > 0]
            ev.sort(key=lambda e: -e.self_cpu_time_total)
            tot = sum(e.self_cpu_time_total for e in ev) / N
            print(f"## {spec} {who}: self CPU {tot:.0f} us/step under the profiler")
            for e in ev[:22]:
                print(f"   {e.count / N:5.1f} x {e.self_cpu_time_total / e.count:6.1f} us = {e.self_cpu_time_total / N:6.1f}  {e.key[:80]}")
            if who == "ours":
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                    for _ in range(3): f()
                    torch.cuda.synchronize()
                p.export_chrome_trace(os.path.join(os.environ.get("OUT", "."), f"trace_{name}_{dt}_{lay}.json"))
        for t in leaves: t.grad = None; t.requires_grad_(False)
