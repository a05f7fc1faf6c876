"""Runs the backward of the grad_bias-summing paths once each (no profiler) for compute-sanitizer:
the channels_last copy with sums (float32 TF32; bf16 through CONVT_BWD_GW_VIA_CL=all when set),
the paired space-to-depth sums kernel, the depthwise channels kernel with grad_bias. Checks each
grad_bias against float64 on the CPU."""
import sys, torch
sys.path.insert(0, "tests")
from cases import Case
import convt_op  # noqa: F401
torch.backends.cudnn.allow_tf32 = True
op = torch.ops.convt.conv_transpose2d_backward
cases = [Case(2, 64, 32, 10, 12, (4, 4), (2, 2), (1, 1)), Case(3, 32, 48, 9, 7, (4, 4), (2, 2), (1, 1), (1, 1)),
         Case(3, 64, 32, 20, 24, (2, 2), (2, 2)), Case(7, 64, 512, 3, 4, (2, 2), (2, 2)),
         Case(2, 64, 64, 9, 11, (3, 3), (2, 2), (1, 1), (1, 1), groups=64, layout="channels_last")]
for case in cases:
    for dtype in (torch.float32, torch.bfloat16):
        x, w, b = case.make(dtype, "cuda", seed=5)
        y = torch.nn.functional.conv_transpose2d(x.double().cpu(), w.double().cpu(), b.double().cpu(), **case.kwargs())
        go = torch.randn(y.shape, dtype=torch.float64).to("cuda", dtype)
        if case.layout == "channels_last":
            go = go.contiguous(memory_format=torch.channels_last)
        gi, gw, gb = op(go, x, w, list(case.stride), list(case.padding), list(case.output_padding), case.groups,
                        list(case.dilation), [True, True, True])
        ref = go.double().cpu().sum(dim=(0, 2, 3))
        err = ((gb.double().cpu() - ref).norm() / ref.norm()).item()
        print(case.id, dtype, f"grad_bias rel err {err:.2e}")
        assert err < 2e-2, err
torch.cuda.synchronize()
print("done")
