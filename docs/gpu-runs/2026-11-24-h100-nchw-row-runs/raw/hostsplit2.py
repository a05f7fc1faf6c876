# Host us per training step, split into forward call and .backward(), issued behind a ~0.2 s spin kernel
# (the GPU never waits on the host and the host never waits on the GPU), 5 rounds x 20 steps, medians of rounds.
# usage: python hostsplit2.py shape:dtype:layout ...
import sys, time, statistics, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
print(f"{'row':36s} {'who':5s} {'fwd':>6s} {'bwd':>6s} {'step':>6s} {'nograd-fwd':>10s}")
for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        for who, fn in (("ours", convt_op.conv_transpose2d), ("torch", F.conv_transpose2d)):
            for _ in range(30):
                for t in leaves: t.grad = None
                fn(x, w, b, **kw).backward(go)
            torch.cuda.synchronize()
            rf, rb, rs, rn = [], [], [], []
            for r in range(5):
                torch.cuda._sleep(400_000_000)
                tf = tb = 0.0
                t00 = time.perf_counter()
                for _ in range(20):
                    for t in leaves: t.grad = None
                    t0 = time.perf_counter(); y = fn(x, w, b, **kw); t1 = time.perf_counter()
                    y.backward(go); t2 = time.perf_counter()
                    tf += t1 - t0; tb += t2 - t1
                rs.append((time.perf_counter() - t00) / 20 * 1e6)
                torch.cuda.synchronize()
                rf.append(tf / 20 * 1e6); rb.append(tb / 20 * 1e6)
                torch.cuda._sleep(400_000_000)
                t0 = time.perf_counter()
                with torch.no_grad():
                    for _ in range(20): fn(x, w, b, **kw)
                rn.append((time.perf_counter() - t0) / 20 * 1e6)
                torch.cuda.synchronize()
            m = statistics.median
            print(f"{spec:36s} {who:5s} {m(rf):6.0f} {m(rb):6.0f} {m(rs):6.0f} {m(rn):10.0f}   (rounds step {' '.join(f'{v:.0f}' for v in rs)})", flush=True)
        for t in leaves: t.grad = None; t.requires_grad_(False)
