"""Device time of our forward's kernels per call (profiler), ours only: python wide_probe.py shape:dtype:layout ..."""
import sys, torch
import convt_op, convt_op.bench as B
from torch.profiler import profile, ProfilerActivity
shapes = {s.name: s for s in B.load_suite()}
for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"), torch.no_grad():
        x, w, b, go = B.make_inputs(s, cfg, 0)
        for _ in range(5): convt_op.conv_transpose2d(x, w, b, **kw)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(20): convt_op.conv_transpose2d(x, w, b, **kw)
            torch.cuda.synchronize()
        ev = sorted((e for e in p.key_averages() if e.device_time_total > 0), key=lambda e: -e.device_time_total)
        print(f"{spec} total {sum(e.device_time_total for e in ev)/20:.1f} us | " + " | ".join(f"{e.device_time_total/20:.1f} {e.key[:70]}" for e in ev[:2]), flush=True)
