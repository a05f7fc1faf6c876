# Runs of outputs in the 16-bit NCHW epilogue at SW == 1 (ws kernel through forward.cu's route,
# CONVT_FWD_VIA_CL=all) on small shapes under compute-sanitizer: output widths 32 (V = 8), 62 with a
# partial channel tile (V = 2), 18 (wide tiles), stride (2, 1), dilation (1, 2); bf16 and fp16; against float64.
import torch, torch.nn.functional as F
import convt_op
g = torch.Generator().manual_seed(7)
cases = [(2, 32, 64, 20, 30, (3, 3), (1, 1), (0, 0), (1, 1)), (2, 32, 40, 17, 62, (3, 3), (1, 1), (1, 1), (1, 1)),
         (2, 32, 64, 16, 16, (3, 3), (1, 1), (0, 0), (1, 1)), (2, 48, 64, 10, 40, (3, 3), (2, 1), (1, 1), (1, 1)),
         (1, 32, 64, 11, 64, (3, 3), (1, 1), (0, 0), (1, 2))]
for dtype in (torch.bfloat16, torch.float16):
    for N, Cin, Cout, H, W, k, s, p, d in cases:
        x = torch.randn(N, Cin, H, W, generator=g).to(dtype).cuda()
        w = torch.randn(Cin, Cout, *k, generator=g).div(Cin * 3).to(dtype).cuda()
        b = torch.randn(Cout, generator=g).to(dtype).cuda()
        y = convt_op.ops.conv_transpose2d(x, w, b, s, p, (0, 0), 1, d)
        r = F.conv_transpose2d(x.double(), w.double(), b.double(), s, p, 0, 1, d)
        print(dtype, (N, Cin, Cout, H, W, k, s, d), ((y.double() - r).norm() / r.norm()).item())
torch.cuda.synchronize()
