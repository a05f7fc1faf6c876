"""dcgan_g2 forward through the warp-specialized kernel with tall tiles (run with CONVT_FWD_PATH=wgmma; channels_last),
for ncu: three warm-up calls, then one profiled call. argv[1]: bfloat16 | float32."""
import sys, torch
import convt_op, convt_op.bench as B
torch.backends.cudnn.allow_tf32 = True
s = {x.name: x for x in B.load_suite()}["dcgan_g2"]
dt = sys.argv[1]
cfg = B.Config(dt, "channels_last", "fwd", True if dt == "float32" else None)
with B.tf32_enabled(True), torch.no_grad():
    x, w, b, go = B.make_inputs(s, cfg, 0)
    for i in range(4):
        y = convt_op.conv_transpose2d(x, w, b, **s.conv_kwargs())
    torch.cuda.synchronize()
print("done")
