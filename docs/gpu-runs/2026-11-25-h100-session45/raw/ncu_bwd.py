"""One suite backward kernel alone (bench's grad modes), for ncu: three warm-up calls, then one profiled call.
argv: shape dtype layout mode (mode: grad_input | grad_weight | both), e.g. depthwise_s2 float16 channels_last grad_input."""
import sys, torch
import convt_op, convt_op.bench as B
torch.backends.cudnn.allow_tf32 = True
name, dt, lay, mode = sys.argv[1:5]
s = {x.name: x for x in B.load_suite()}[name]
cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
mask = {"grad_input": [True, False, False], "grad_weight": [False, True, False], "both": [True, True, False]}[mode]
with B.tf32_enabled(True), torch.no_grad():
    x, w, b, go = B.make_inputs(s, cfg, 0)
    for i in range(4):
        B.convt_backward(go, x, w, mask, **s.conv_kwargs())
    torch.cuda.synchronize()
print("done")
