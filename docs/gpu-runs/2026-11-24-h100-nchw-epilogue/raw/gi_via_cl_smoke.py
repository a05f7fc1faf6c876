# For compute-sanitizer: NCHW bf16 grad_input at stride 2 through the channels_last residues (run with CONVT_BWD_GI=forward).
import sys, torch, torch.nn.functional as F
sys.path.insert(0, "tests")
import convt_op
from cases import Case
for case in [Case(2, 64, 32, 10, 12, (4, 4), (2, 2), (1, 1)), Case(2, 48, 40, 9, 7, (3, 3), (2, 2), (1, 1), (1, 1), bias=False)]:
    x, w, b = case.make(torch.bfloat16, "cuda", seed=66)
    leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
    y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
    go = torch.randn(y.shape, generator=torch.Generator().manual_seed(67), dtype=torch.float64)
    y.backward(go.to("cuda", torch.bfloat16))
    refs = [t.detach().cpu().double().requires_grad_() for t in leaves]
    F.conv_transpose2d(refs[0], refs[1], refs[2] if b is not None else None, **case.kwargs()).backward(go)
    print(case.id, max(((t.grad.cpu().double() - r.grad).norm() / r.grad.norm()).item() for t, r in zip(leaves, refs)))
