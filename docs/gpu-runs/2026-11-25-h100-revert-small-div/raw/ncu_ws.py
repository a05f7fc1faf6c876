"""One suite forward through the warp-specialized kernel, for ncu: three warm-up calls, then one
profiled call. argv: shape dtype layout (e.g. kb1_71_rect_k3 float32 channels_last)."""
import sys, torch
import convt_op, convt_op.bench as B
torch.backends.cudnn.allow_tf32 = True
name, dt, lay = sys.argv[1:4]
s = {x.name: x for x in B.load_suite()}[name]
cfg = B.Config(dt, lay, "fwd", True if dt == "float32" else None)
with B.tf32_enabled(True), torch.no_grad():
    x, w, b, go = B.make_inputs(s, cfg, 0)
    for i in range(4):
        y = convt_op.conv_transpose2d(x, w, b, **s.conv_kwargs())
    torch.cuda.synchronize()
print("done")
