"""Host time of small training steps, ours against PyTorch: per-step host time of the forward call and
of .backward() (GPU kept busy by a sleep kernel so the host never waits), then every CUDA runtime /
driver API call per step (torch.profiler CPU activity: name, calls per step, host us per step) and the
top CPU ops by self time.
usage: python host_api.py shape:dtype:layout ...   (fwdbwd only)"""
import os, sys, time, statistics, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
from torch.profiler import profile, ProfilerActivity
op = convt_op.conv_transpose2d
shapes = {s.name: s for s in B.load_suite()}
only = os.environ.get("HA_WHO")
for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        for who, fn in (("ours", op), ("pytorch", F.conv_transpose2d)):
            if only and who != only: continue
            def f(split=None):
                for t in leaves: t.grad = None
                t0 = time.perf_counter()
                y = fn(x, w, b, **kw)
                t1 = time.perf_counter()
                y.backward(go)
                t2 = time.perf_counter()
                if split is not None: split.append((t1 - t0, t2 - t1))
            for _ in range(20): f()
            torch.cuda.synchronize()
            rounds = []
            for r in range(7):
                torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time: the host never waits on the queue
                sp = []
                for _ in range(30): f(sp)
                torch.cuda.synchronize()
                rounds.append((statistics.median(a for a, _ in sp) * 1e6, statistics.median(b_ for _, b_ in sp) * 1e6))
            fw = sorted(a for a, _ in rounds); bw = sorted(b_ for _, b_ in rounds)
            print(f"## {spec} {who}: host forward call min/median {fw[0]:.0f}/{fw[3]:.0f} us, backward {bw[0]:.0f}/{bw[3]:.0f} us")
            n = 30
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                torch.cuda._sleep(200_000_000)
                for _ in range(n): f()
                torch.cuda.synchronize()
            ka = p.key_averages()
            api = [e for e in ka if e.key.startswith("cu") and e.device_time_total == 0 and "Synchronize" not in e.key and "_sleep" not in e.key]
            api.sort(key=lambda e: -e.cpu_time_total)
            tot = sum(e.cpu_time_total for e in api) / n
            print(f"   API calls: {sum(e.count for e in api)/n:.1f} per step, {tot:.0f} us per step (profiled)")
            for e in api[:14]:
                print(f"   {e.cpu_time_total/n:8.1f} us x{e.count/n:5.1f}  {e.key[:90]}")
            ops = [e for e in ka if not e.key.startswith("cu") and e.device_time_total == 0]
            ops.sort(key=lambda e: -e.self_cpu_time_total)
            print("   top CPU ops by self time:")
            for e in ops[:12]:
                print(f"   {e.self_cpu_time_total/n:8.1f} us x{e.count/n:5.1f}  {e.key[:90]}")
        for t in leaves: t.grad = None; t.requires_grad_(False)
