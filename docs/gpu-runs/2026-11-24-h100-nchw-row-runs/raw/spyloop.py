# A training loop to sample with py-spy: python spyloop.py ours|torch shape:dtype:layout seconds
import sys, time, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
who, spec, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
name, dt, lay = spec.split(":"); s = shapes[name]; kw = s.conv_kwargs()
cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
fn = convt_op.conv_transpose2d if who == "ours" else F.conv_transpose2d
with B.tf32_enabled(dt == "float32"):
    x, w, b, go = B.make_inputs(s, cfg, 0)
    leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
    for _ in range(50):
        for t in leaves: t.grad = None
        fn(x, w, b, **kw).backward(go)
    torch.cuda.synchronize(); print("ready", flush=True)
    t0 = time.perf_counter(); n = 0
    while time.perf_counter() - t0 < secs:
        for _ in range(50):
            for t in leaves: t.grad = None
            fn(x, w, b, **kw).backward(go)
        n += 50
    torch.cuda.synchronize(); print(f"{who} {spec}: {(time.perf_counter()-t0)/n*1e6:.0f} us/step over {n}", flush=True)
