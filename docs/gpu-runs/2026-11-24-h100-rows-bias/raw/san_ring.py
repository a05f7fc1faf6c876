"""The TF32 ring grad_weight kernel with grad_bias sums (grad_weight_wgmma_tf32_ring_kernel<.., true>) and the
stride-1 channels_last copy of grad_output with sums (bf16), once per case (no profiler) for compute-sanitizer;
grad_bias against float64 on the CPU."""
import sys, torch
sys.path.insert(0, "tests")
from cases import Case
import convt_op  # noqa: F401
torch.backends.cudnn.allow_tf32 = True
bwd = torch.ops.convt.conv_transpose2d_backward
cases = [(Case(2, 64, 48, 10, 40, (3, 3), (1, 1), (1, 1)), torch.float32, [False, True, True]),
         (Case(3, 48, 72, 7, 36, (3, 3)), torch.float32, [True, True, True]),
         (Case(2, 64, 64, 6, 68, (2, 3), (1, 1), (0, 1), (0, 0), (2, 1)), torch.float32, [False, True, True]),
         (Case(2, 64, 48, 10, 12, (3, 3), (1, 1), (1, 1)), torch.bfloat16, [True, False, True]),
         (Case(2, 32, 48, 9, 13, (3, 5), (1, 1), (1, 2)), torch.float32, [True, True, True])]
for case, dtype, mask in cases:
    x, w, b = case.make(dtype, "cuda", seed=5)
    y = torch.nn.functional.conv_transpose2d(x.double().cpu(), w.double().cpu(), b.double().cpu(), **case.kwargs())
    go = torch.randn(y.shape, dtype=torch.float64).to("cuda", dtype)
    gi, gw, gb = bwd(go, x, w, list(case.stride), list(case.padding), list(case.output_padding), case.groups,
                     list(case.dilation), mask)
    ref = go.double().cpu().sum(dim=(0, 2, 3))
    err = ((gb.double().cpu() - ref).norm() / ref.norm()).item()
    print(case.id, dtype, f"grad_bias rel err {err:.2e}")
    assert err < (1e-5 if dtype == torch.float32 else 1e-2), err
torch.cuda.synchronize()
print("done")
