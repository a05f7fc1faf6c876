"""Tall tiles of the warp-specialized forward (several images per tile) once per case (no profiler) for
compute-sanitizer: channels_last and NCHW (the route), bf16 and float32 (TF32), against float64 on the CPU."""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, "tests")
from cases import Case
import convt_op
torch.backends.cudnn.allow_tf32 = True
cases = [Case(23, 32, 64, 4, 4, (4, 4), (2, 2), (1, 1), layout="channels_last"),
         Case(13, 32, 72, 5, 6, (3, 3), (1, 1), (1, 1), layout="channels_last"),
         Case(3, 16, 64, 3, 3, (2, 2), bias=False, layout="channels_last"),
         Case(23, 32, 64, 4, 4, (4, 4), (2, 2), (1, 1)),
         Case(13, 32, 32, 5, 6, (3, 3), (1, 1), (1, 1))]
for case in cases:
    for dtype in (torch.bfloat16, torch.float32):
        x, w, b = case.make(dtype, "cuda", seed=5)
        y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        ref = F.conv_transpose2d(*(t.cpu().double() if t is not None else None for t in (x, w, b)), **case.kwargs())
        err = ((y.cpu().double() - ref).norm() / ref.norm()).item()
        print(case.id, dtype, f"rel err {err:.2e}")
        assert err < 1e-2, err
torch.cuda.synchronize()
print("done")
