# Host us per training step, split into the forward call and .backward(), issued behind a ~0.2 s spin kernel
# (no back-pressure), ours and PyTorch's INTERLEAVED per round (both sides under the same machine state),
# 9 rounds x 20 steps; min and median over rounds. Also the forward alone under no_grad, and the forward
# call with grad whose output is dropped at once (so that the previous graph's release is timed apart).
# usage: python hostsplit3.py shape:dtype:layout ...
import sys, time, statistics, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
SPIN = 400_000_000
print(f"{'row':36s} {'who':5s} {'fwd min/med':>12s} {'bwd min/med':>12s} {'release':>8s} {'nograd':>8s}")
for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":"); s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        sides = (("ours", convt_op.conv_transpose2d), ("torch", F.conv_transpose2d))
        res = {who: {"f": [], "b": [], "r": [], "n": []} for who, _ in sides}
        for who, fn in sides:
            for _ in range(30):
                for t in leaves: t.grad = None
                fn(x, w, b, **kw).backward(go)
        torch.cuda.synchronize()
        for r in range(9):
            for who, fn in (sides if r % 2 == 0 else sides[::-1]):
                torch.cuda._sleep(SPIN)
                tf = tb = tr = 0.0
                for _ in range(20):
                    for t in leaves: t.grad = None
                    t0 = time.perf_counter(); y = fn(x, w, b, **kw); t1 = time.perf_counter()
                    y.backward(go); t2 = time.perf_counter()
                    del y; t3 = time.perf_counter()
                    tf += t1 - t0; tb += t2 - t1; tr += t3 - t2
                torch.cuda.synchronize()
                torch.cuda._sleep(SPIN)
                t0 = time.perf_counter()
                with torch.no_grad():
                    for _ in range(20): fn(x, w, b, **kw)
                tn = time.perf_counter() - t0
                torch.cuda.synchronize()
                for k, v in (("f", tf), ("b", tb), ("r", tr), ("n", tn)):
                    res[who][k].append(v / 20 * 1e6)
        for who, _ in sides:
            d = res[who]
            print(f"{spec:36s} {who:5s} {min(d['f']):5.0f}/{statistics.median(d['f']):5.0f} "
                  f"{min(d['b']):5.0f}/{statistics.median(d['b']):5.0f} {min(d['r']):8.0f} {min(d['n']):8.0f}", flush=True)
        for t in leaves: t.grad = None; t.requires_grad_(False)
