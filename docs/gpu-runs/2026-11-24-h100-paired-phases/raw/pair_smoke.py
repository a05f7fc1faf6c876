# Paired column phases (ws kernel, NCHW output at SW == 2) on small shapes under compute-sanitizer:
# k3 / k4 at stride 2, odd output width, stride (1, 2), float32 and bf16; values against float64.
import torch, torch.nn.functional as F
import convt_op
torch.backends.cudnn.allow_tf32 = True
g = torch.Generator().manual_seed(5)
shapes = [(2, 32, 64, 20, 24, 3, 2, 1, 1), (2, 32, 64, 17, 13, 4, 2, 0, 0), (1, 64, 128, 9, 31, 3, 2, 1, 1), (1, 32, 64, 11, 15, 5, 2, 2, 1), (1, 32, 64, 5, 128, 3, 2, 1, 1)]
for dtype in (torch.float32, torch.bfloat16):
    for N, Cin, Cout, H, W, k, s, p, op in shapes:
        x = torch.randn(N, Cin, H, W, generator=g).to(dtype).cuda()
        w = torch.randn(Cin, Cout, k, k, generator=g).div(Cin * k).to(dtype).cuda()
        b = torch.randn(Cout, generator=g).to(dtype).cuda()
        y = convt_op.ops.conv_transpose2d(x, w, b, (s, s), (p, p), (op, op), 1, (1, 1))
        r = F.conv_transpose2d(x.double(), w.double(), b.double(), (s, s), (p, p), (op, op), 1, (1, 1))
        print(dtype, (N, Cin, Cout, H, W, k, s), ((y.double() - r).norm() / r.norm()).item())
    x = torch.randn(2, 32, 40, 70, generator=g).to(dtype).cuda()
    w = torch.randn(32, 64, 3, 4, generator=g).div(96).to(dtype).cuda()
    y = convt_op.ops.conv_transpose2d(x, w, None, (1, 2), (1, 1), (0, 0), 1, (1, 1))
    r = F.conv_transpose2d(x.double(), w.double(), None, (1, 2), (1, 1))
    print(dtype, "s(1,2)", ((y.double() - r).norm() / r.norm()).item())
torch.cuda.synchronize()
