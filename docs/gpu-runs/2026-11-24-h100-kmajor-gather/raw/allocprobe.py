# Allocator events over training steps (next session): does our step make the caching allocator call cudaMalloc /
# cudaFree (a cudaFree synchronizes)? usage: python allocprobe.py shape:dtype:layout ...
import sys, time, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
KEYS = ("num_device_alloc", "num_device_free", "num_alloc_retries", "num_sync_all_streams")
for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":"); s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        for who, fn in (("ours", convt_op.conv_transpose2d), ("torch", F.conv_transpose2d)):
            for _ in range(50):
                for t in leaves: t.grad = None
                fn(x, w, b, **kw).backward(go)
            torch.cuda.synchronize(); before = torch.cuda.memory_stats()
            walls = []
            for r in range(10):
                t0 = time.perf_counter()
                for _ in range(100):
                    for t in leaves: t.grad = None
                    fn(x, w, b, **kw).backward(go)
                torch.cuda.synchronize(); walls.append((time.perf_counter() - t0) * 1e4)
            after = torch.cuda.memory_stats()
            delta = {k: after.get(k, 0) - before.get(k, 0) for k in KEYS}
            print(f"{spec:36s} {who:5s} us per step per round {' '.join(f'{v:.0f}' for v in walls)}  {delta}", flush=True)
        for t in leaves: t.grad = None; t.requires_grad_(False)
