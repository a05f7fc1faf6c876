"""Host time per training step, ours against PyTorch's, alternating in one process (this host's noise between
processes is ~30%, run YG): the GPU kept busy by a sleep kernel so that no call waits for it, ROUNDS rounds of
N steps per side, order flipped each round; prints per-round medians and the median ratio.
usage: python host_ab.py shape:dtype:layout ...   (env ROUNDS, N)"""
import os, sys, time, statistics, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
op = convt_op.conv_transpose2d
shapes = {s.name: s for s in B.load_suite()}
ROUNDS, N = int(os.environ.get("ROUNDS", 9)), int(os.environ.get("N", 30))

def med_host_us(fn):
    torch.cuda._sleep(200_000_000)
    ts = []
    for _ in range(N):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return statistics.median(ts) * 1e6

for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        def step(fn):
            def f():
                for t in leaves: t.grad = None
                fn(x, w, b, **kw).backward(go)
            return f
        fns = {"ours": step(op), "pytorch": step(F.conv_transpose2d)}
        for f in fns.values():
            for _ in range(10): f()
        torch.cuda.synchronize()
        res = {"ours": [], "pytorch": []}
        for r in range(ROUNDS):
            order = ["ours", "pytorch"] if r % 2 == 0 else ["pytorch", "ours"]
            for who in order:
                res[who].append(med_host_us(fns[who]))
        ratios = sorted(o / p for o, p in zip(res["ours"], res["pytorch"]))
        print(f"## {spec}: host us per step, median over rounds: ours {statistics.median(res['ours']):.0f}, "
              f"pytorch {statistics.median(res['pytorch']):.0f}; ours/pytorch median {statistics.median(ratios):.2f} "
              f"(range {ratios[0]:.2f}-{ratios[-1]:.2f})")
        for t in leaves: t.grad = None; t.requires_grad_(False)
