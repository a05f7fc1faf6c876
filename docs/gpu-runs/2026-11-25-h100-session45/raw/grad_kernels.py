"""Device time per kernel of one backward call with an output_mask (bench's grad modes), ours and PyTorch's.
usage (GPU machine, repository root): python scratch/lead/grad_kernels.py shape:dtype:layout:mode ...
  mode: grad_input | grad_weight | both. float32 runs with TF32 on, as the benchmark. KT_OURS_ONLY=1: ours only."""
import os, sys, torch
import convt_op, convt_op.bench as B
from torch.profiler import profile, ProfilerActivity
shapes = {s.name: s for s in B.load_suite()}
for spec in sys.argv[1:]:
    name, dt, lay, mode = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    mask = {"grad_input": [True, False, False], "grad_weight": [False, True, False], "both": [True, True, False]}[mode]
    with B.tf32_enabled(True), torch.no_grad():
        x, w, b, go = B.make_inputs(s, cfg, 0)
        whos = (("ours", B.convt_backward),) + (() if os.environ.get("KT_OURS_ONLY") else (("pytorch", B.pytorch_backward),))
        for who, fn in whos:
            for _ in range(5): fn(go, x, w, mask, **kw)
            torch.cuda.synchronize()
            n = 10
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                for _ in range(n): fn(go, x, w, mask, **kw)
                torch.cuda.synchronize()
            ev = sorted((e for e in p.key_averages() if e.device_time_total > 0), key=lambda e: -e.device_time_total)
            print(f"## {spec} {who}: device {sum(e.device_time_total for e in ev) / n:.0f} us/call")
            for e in ev[:8]:
                print(f"   {e.device_time_total / n:8.1f} us x{e.count / n:.0f}  {e.key[:110]}")
