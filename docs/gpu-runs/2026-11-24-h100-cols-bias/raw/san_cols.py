"""The channels_last columns copy with grad_bias sums (im2col_cl_taps_sums_kernel, KU 1-16) and the
direct GEMM's repeat_bias_kernel, once each (no profiler) for compute-sanitizer; grad_bias and the
forward against float64 on the CPU."""
import sys, torch
sys.path.insert(0, "tests")
from cases import Case
import convt_op  # noqa: F401
torch.backends.cudnn.allow_tf32 = True
bwd = torch.ops.convt.conv_transpose2d_backward
cases = [Case(3, 64, 48, 9, 15, (2, 2), (2, 2), layout="channels_last"),   # bf16 KU 1, float32 2 (tail step)
         Case(2, 64, 512, 5, 6, (2, 2), (2, 2), layout="channels_last"),   # 8 / 16
         Case(2, 64, 32, 7, 9, (3, 3), (3, 3), layout="channels_last"),    # 2 / 4
         Case(2, 64, 192, 5, 7, (2, 2), (2, 2), layout="channels_last")]   # 4 / 8
for case in cases:
    for dtype in (torch.float32, torch.bfloat16):
        x, w, b = case.make(dtype, "cuda", seed=5)
        w = w.contiguous(memory_format=torch.channels_last)
        y = torch.nn.functional.conv_transpose2d(x.double().cpu(), w.double().cpu(), b.double().cpu(), **case.kwargs())
        go = torch.randn(y.shape, dtype=torch.float64).to("cuda", dtype).contiguous(memory_format=torch.channels_last)
        gi, gw, gb = bwd(go, x, w, list(case.stride), list(case.padding), list(case.output_padding), case.groups,
                         list(case.dilation), [True, True, True])
        ref = go.double().cpu().sum(dim=(0, 2, 3))
        err = ((gb.double().cpu() - ref).norm() / ref.norm()).item()
        print(case.id, dtype, f"grad_bias rel err {err:.2e}")
        assert err < 2e-2, err
# The direct per-row GEMM forward with a bias (64-pixel rows; forward_gemm.cu repeat_bias).
case = Case(2, 128, 40, 3, 64, (2, 2), (2, 2), layout="channels_last")
for dtype in (torch.float32, torch.bfloat16):
    x, w, b = case.make(dtype, "cuda", seed=6)
    out = torch.ops.convt.conv_transpose2d(x, w, b, list(case.stride), list(case.padding), list(case.output_padding),
                                           case.groups, list(case.dilation))
    ref = torch.nn.functional.conv_transpose2d(x.double().cpu(), w.double().cpu(), b.double().cpu(), **case.kwargs())
    err = ((out.double().cpu() - ref).norm() / ref.norm()).item()
    print(case.id, dtype, f"forward rel err {err:.2e}")
    assert err < 2e-2, err
torch.cuda.synchronize()
print("done")
