# Does a step wait for the GPU? Per row and side:
#  behind1: host us of one step issued behind a ~100 ms spin kernel (a sync inside shows as ~1e5 us)
#  behindN: host us per step of 12 steps issued behind the spin (pure host issue cost, no back-pressure)
#  loop:    wall us per step of 200 back-to-back steps (synced at the end)
#  dev:     device us per step (profiler CUDA events, 20 steps)
#  bench:   the benchmark's timer (do_bench median, L2 flush between calls)
# usage: python syncprobe.py shape:dtype:layout:mode ...   (mode fwd | fwdbwd)
import sys, time, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
from torch.profiler import profile, ProfilerActivity

shapes = {s.name: s for s in B.load_suite()}
timer, _ = B.make_timer(25, 100)
SPIN = 200_000_000  # cycles: ~0.1 s


def spin():
    torch.cuda._sleep(SPIN)


print(f"{'row':42s} {'who':5s} {'behind1':>8s} {'behindN':>8s} {'loop':>8s} {'dev':>8s} {'bench':>8s}")
for spec in sys.argv[1:]:
    name, dt, lay, mode = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, mode, True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None] if mode == "fwdbwd" else []
        for who, fn in (("ours", convt_op.conv_transpose2d), ("torch", F.conv_transpose2d)):
            if mode == "fwdbwd":
                def call(fn=fn):
                    fn(x, w, b, **kw).backward(go)
            else:
                def call(fn=fn):
                    with torch.no_grad():
                        fn(x, w, b, **kw)

            def step():
                for t in leaves:
                    t.grad = None
                call()
            for _ in range(30):
                step()
            torch.cuda.synchronize()
            spin(); t0 = time.perf_counter(); step(); t1 = time.perf_counter(); torch.cuda.synchronize()
            behind1 = (t1 - t0) * 1e6
            spin(); t0 = time.perf_counter()
            for _ in range(12):
                step()
            t1 = time.perf_counter(); torch.cuda.synchronize()
            behindN = (t1 - t0) * 1e6 / 12
            torch.cuda.synchronize(); t0 = time.perf_counter()
            for _ in range(200):
                step()
            torch.cuda.synchronize(); loop = (time.perf_counter() - t0) * 1e6 / 200
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                for _ in range(20):
                    step()
                torch.cuda.synchronize()
            dev = sum(e.self_device_time_total for e in p.key_averages()) / 20
            bench = timer(call, leaves or None) * 1e3
            print(f"{spec:42s} {who:5s} {behind1:8.0f} {behindN:8.0f} {loop:8.0f} {dev:8.0f} {bench:8.0f}", flush=True)
        for t in leaves:
            t.grad = None
            t.requires_grad_(False)
