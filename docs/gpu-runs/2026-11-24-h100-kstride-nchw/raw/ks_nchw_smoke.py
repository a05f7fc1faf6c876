# For compute-sanitizer: NCHW kernel == stride forward (kNchw) and NCHW float32 grad_input via the channels_last residues.
import sys, torch, torch.nn.functional as F
sys.path.insert(0, "tests")
import convt_op
from cases import Case
torch.backends.cudnn.allow_tf32 = True
for case in [Case(3, 64, 64, 5, 7, (2, 2), (2, 2)), Case(2, 40, 36, 5, 7, (3, 2), (3, 2)), Case(2, 256, 72, 9, 14, (2, 2), (2, 2), bias=False)]:
    for dtype in (torch.float32, torch.bfloat16):
        x, w, b = case.make(dtype, "cuda", seed=70)
        y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
        ref = F.conv_transpose2d(*(t.cpu().double() if t is not None else None for t in (x, w, b)), **case.kwargs())
        print(case.id, dtype, ((y.cpu().double() - ref).norm() / ref.norm()).item())
case = Case(2, 64, 32, 10, 12, (4, 4), (2, 2), (1, 1))
x, w, b = case.make(torch.float32, "cuda", seed=66)
leaves = [t.requires_grad_() for t in (x, w, b)]
y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
go = torch.randn(y.shape, generator=torch.Generator().manual_seed(67), dtype=torch.float64)
y.backward(go.to("cuda", torch.float32))
refs = [t.detach().cpu().double().requires_grad_() for t in leaves]
F.conv_transpose2d(*refs, **case.kwargs()).backward(go)
print("gi fp32 k4s2", max(((t.grad.cpu().double() - r.grad).norm() / r.grad.norm()).item() for t, r in zip(leaves, refs)))
