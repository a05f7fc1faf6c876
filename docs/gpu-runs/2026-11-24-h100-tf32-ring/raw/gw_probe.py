"""Training steps of one suite row, ours only, for ncu: python gw_probe.py shape:dtype:layout steps"""
import sys, torch
import convt_op, convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
spec, steps = sys.argv[1], int(sys.argv[2])
name, dt, lay = spec.split(":"); s = shapes[name]; kw = s.conv_kwargs()
cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
with B.tf32_enabled(dt == "float32"):
    x, w, b, go = B.make_inputs(s, cfg, 0)
    leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
    for _ in range(steps):
        for t in leaves: t.grad = None
        convt_op.conv_transpose2d(x, w, b, **kw).backward(go)
    torch.cuda.synchronize()
print("done", spec, steps)
