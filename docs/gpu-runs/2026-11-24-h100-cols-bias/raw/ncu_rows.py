"""kb2_2 float32 NCHW backward, grad_weight + grad_bias only (the rows grad_weight kernel), for ncu:
three warm-up calls, then one profiled call."""
import sys, torch
sys.path.insert(0, "tests")
import convt_op, convt_op.bench as B  # noqa: F401
torch.backends.cudnn.allow_tf32 = True
s = {x.name: x for x in B.load_suite()}["kb2_2_s2_op1"]
cfg = B.Config("float32", "nchw", "fwdbwd", True)
with B.tf32_enabled(True):
    x, w, b, go = B.make_inputs(s, cfg, 0)
    for i in range(4):
        r = torch.ops.convt.conv_transpose2d_backward(go, x, w, list(s.stride), list(s.padding), list(s.output_padding),
                                                      s.groups, list(s.dilation), [False, True, True])
    torch.cuda.synchronize()
print("done")
