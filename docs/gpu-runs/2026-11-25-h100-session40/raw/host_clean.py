"""Host time per call without the profiler: the forward call and .backward() of training steps, ours and
PyTorch (the GPU kept busy by a sleep kernel so the host never waits), and calibration primitives
(torch.empty, an elementwise launch, a small torch.mm). Run with CONVT_HOST_TRACE=1 for our sections.
usage: python host_clean.py shape:dtype:layout ..."""
import os, sys, time, statistics, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
op = convt_op.conv_transpose2d
shapes = {s.name: s for s in B.load_suite()}

def host_us(fn, n=40, rounds=7):
    for _ in range(10): fn()
    torch.cuda.synchronize()
    meds = []
    for _ in range(rounds):
        torch.cuda._sleep(100_000_000)
        ts = []
        for _ in range(n):
            t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        meds.append(statistics.median(ts) * 1e6)
    meds.sort()
    return meds[0], meds[len(meds) // 2]

a = torch.randn(64, 64, device="cuda"); bm = torch.randn(64, 64, device="cuda")
print("calib torch.empty(1 MB)  min/med us %.1f/%.1f" % host_us(lambda: torch.empty(1 << 18, device="cuda")))
print("calib a.add_(1)          min/med us %.1f/%.1f" % host_us(lambda: a.add_(1)))
print("calib torch.mm 64x64     min/med us %.1f/%.1f" % host_us(lambda: torch.mm(a, bm)))
for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        for who, fn in (("ours", op), ("pytorch", F.conv_transpose2d)):
            with torch.no_grad():
                f_ng = host_us(lambda: fn(x, w, b, **kw))
            ys = []
            def fwd():
                for t in leaves: t.grad = None
                ys.append(fn(x, w, b, **kw))
            f_g = host_us(fwd, n=40, rounds=1)  # (one round: the outputs stay alive)
            def step():
                for t in leaves: t.grad = None
                fn(x, w, b, **kw).backward(go)
            st = host_us(step)
            ys.clear()
            print(f"## {spec} {who}: host us min/med: forward no_grad {f_ng[0]:.0f}/{f_ng[1]:.0f}, forward recorded "
                  f"{f_g[0]:.0f}/{f_g[1]:.0f}, step {st[0]:.0f}/{st[1]:.0f}")
        for t in leaves: t.grad = None; t.requires_grad_(False)
