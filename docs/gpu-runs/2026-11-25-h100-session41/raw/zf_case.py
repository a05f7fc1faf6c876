import sys, torch, torch.nn.functional as F
sys.path.insert(0, "tests")
from cases import Case
import convt_op
torch.backends.cudnn.allow_tf32 = True
which = sys.argv[1]
case = {"a": Case(2, 32, 32, 20, 36, (3, 3), padding=(1, 1)), "b": Case(2, 64, 128, 11, 40, (3, 5), bias=False),
        "c": Case(2, 32, 64, 16, 16, (4, 4), (2, 2), (1, 1))}[which[0]]
dtype = {"f": torch.float32, "b": torch.bfloat16}[which[1]]
x, w, b = case.make(dtype, "cuda", seed=70)
y = convt_op.ops.conv_transpose2d(x, w, b, **case.kwargs())
torch.cuda.synchronize()
ref = F.conv_transpose2d(*(t.cpu().double() if t is not None else None for t in (x, w, b)), **case.kwargs())
print(which, "err", ((y.cpu().double() - ref).norm() / ref.norm()).item())
