"""CUDA runtime / driver API calls per training step (and per no_grad forward), ours and PyTorch:
counts are exact, the profiler's CPU times are inflated (read them only against each other).
usage: python host_calls.py shape:dtype:layout ..."""
import sys, torch, torch.nn.functional as F
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
            for mode in ("fwd", "step"):
                def f():
                    if mode == "fwd":
                        with torch.no_grad():
                            fn(x, w, b, **kw)
                        return
                    for t in leaves: t.grad = None
                    fn(x, w, b, **kw).backward(go)
                for _ in range(10): f()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                    for _ in range(N): f()
                    torch.cuda.synchronize()
                ev = p.key_averages()
                api = [e for e in ev if e.key.startswith(("cuda", "cu", "cublas")) and e.device_time_total == 0
                       and e.key not in ("cudaDeviceSynchronize",)]
                api.sort(key=lambda e: -e.cpu_time_total)
                kern = [e for e in ev if e.device_time_total > 0]
                nk = sum(e.count for e in kern) / N
                print(f"## {spec} {who} {mode}: {nk:.0f} device activities/step; API calls per step (count, cpu us each):")
                for e in api[:14]:
                    print(f"   {e.count / N:5.1f} x {e.cpu_time_total / max(e.count, 1):7.1f} us  {e.key[:70]}")
                top = [e for e in ev if e.device_time_total == 0 and not e.key.startswith(("cuda", "cu"))]
                top.sort(key=lambda e: -e.cpu_time_total)
                print("   top CPU ops (total us per step): " + ", ".join(f"{e.key[:40]} {e.cpu_time_total / N:.0f}" for e in top[:8]))
        for t in leaves: t.grad = None; t.requires_grad_(False)
