"""One float32 channels_last grad_weight-alone call per shape named in argv (bench inputs), for ncu."""
import sys, torch
import convt_op, convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
for name in sys.argv[1:]:
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config("float32", "channels_last", "fwdbwd", True)
    with B.tf32_enabled(True), torch.no_grad():
        x, w, b, go = B.make_inputs(s, cfg, 0)
        for _ in range(2):
            B.convt_backward(go, x, w, [False, True, False], **kw)
        torch.cuda.synchronize()
