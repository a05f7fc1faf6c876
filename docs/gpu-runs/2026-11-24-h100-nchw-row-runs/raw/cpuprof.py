# Host profile of one training step (torch.profiler CPU activity): top ops by self CPU time per step.
import sys, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
from torch.profiler import profile, ProfilerActivity
shapes = {s.name: s for s in B.load_suite()}
for spec in sys.argv[1:]:
    name, dt, lay, mode = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, mode, True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        for who, fn in (("ours", convt_op.conv_transpose2d), ("torch", F.conv_transpose2d)):
            def step():
                for t in leaves: t.grad = None
                fn(x, w, b, **kw).backward(go)
            for _ in range(30): step()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU]) as p:
                for _ in range(50): step()
                torch.cuda.synchronize()
            ev = sorted(p.key_averages(), key=lambda e: -e.self_cpu_time_total)
            tot = sum(e.self_cpu_time_total for e in ev) / 50
            print(f"== {spec} {who}: self CPU {tot:.0f} us/step (profiled)")
            for e in ev[:18]:
                print(f"   {e.self_cpu_time_total/50:7.1f} us x{e.count/50:4.1f}  {e.key[:90]}")
        for t in leaves: t.grad = None; t.requires_grad_(False)
