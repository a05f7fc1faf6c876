"""PyTorch's (cuDNN's) forward on one suite shape, for ncu: python pt_probe.py shape:dtype:layout [calls]"""
import sys, torch, torch.nn.functional as F
import convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
name, dt, lay = sys.argv[1].split(":")
s = shapes[name]; kw = s.conv_kwargs()
cfg = B.Config(dt, lay, "fwd", True if dt == "float32" else None)
with B.tf32_enabled(dt == "float32"), torch.no_grad():
    x, w, b, go = B.make_inputs(s, cfg, 0)
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 8): F.conv_transpose2d(x, w, b, **kw)
    torch.cuda.synchronize()
