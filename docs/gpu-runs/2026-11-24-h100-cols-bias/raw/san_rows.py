"""The float32 rows grad_weight kernel with grad_bias sums (grad_weight_rows_async_kernel<.., 2, true>)
once per case (grad_weight and grad_bias only, TF32; no profiler) for compute-sanitizer; grad_bias against
float64 on the CPU."""
import sys, torch
sys.path.insert(0, "tests")
from cases import Case
import convt_op  # noqa: F401
torch.backends.cudnn.allow_tf32 = True
bwd = torch.ops.convt.conv_transpose2d_backward
cases = [Case(2, 64, 64, 9, 40, (3, 3), (2, 2), (1, 1), (1, 1)), Case(2, 64, 48, 7, 36, (4, 4), (2, 2), (1, 1)),
         Case(2, 64, 64, 6, 28, (5, 5), (2, 2), (2, 2)), Case(1, 32, 32, 5, 72, (3, 3), (3, 2), (1, 1), (0, 1))]
for case in cases:
    x, w, b = case.make(torch.float32, "cuda", seed=5)
    y = torch.nn.functional.conv_transpose2d(x.double().cpu(), w.double().cpu(), b.double().cpu(), **case.kwargs())
    go = torch.randn(y.shape, dtype=torch.float64).to("cuda", torch.float32)
    gi, gw, gb = bwd(go, x, w, list(case.stride), list(case.padding), list(case.output_padding), case.groups,
                     list(case.dilation), [False, True, True])
    ref = go.double().cpu().sum(dim=(0, 2, 3))
    err = ((gb.double().cpu() - ref).norm() / ref.norm()).item()
    print(case.id, f"grad_bias rel err {err:.2e}")
    assert err < 1e-5, err
torch.cuda.synchronize()
print("done")
