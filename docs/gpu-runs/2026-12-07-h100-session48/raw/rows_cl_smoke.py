"""Small float32 channels_last grad_weight cases on the channels_last rows kernel (for compute-sanitizer): both
tile sizes, one and two planes, grad_bias fused, groups, partial channel tiles; checked against float64 on the CPU."""
import torch, torch.nn.functional as F
import convt_op  # noqa: F401
torch.backends.cudnn.allow_tf32 = True
torch.backends.cuda.matmul.allow_tf32 = True
cases = [  # N, Cin, Cout, H, W, k, s, p, op, d, groups
    (1, 64, 64, 5, 40, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    (1, 64, 36, 4, 37, (3, 5), (1, 1), (1, 2), (0, 0), (1, 1), 1),
    (1, 48, 64, 3, 33, (3, 7), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (1, 32, 32, 4, 35, (3, 3), (2, 1), (1, 1), (1, 0), (1, 1), 1),
    (1, 64, 64, 4, 40, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 2),
    (1, 64, 32, 3, 40, (3, 3), (1, 1), (4, 4), (0, 0), (4, 4), 1),
]
for n, ci, co, h, w, k, s, p, op, d, gr in cases:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, ci, h, w, generator=g, dtype=torch.float64)
    wt = torch.randn(ci, co // gr, *k, generator=g, dtype=torch.float64)
    b = torch.randn(co, generator=g, dtype=torch.float64)
    kw = dict(stride=s, padding=p, output_padding=op, dilation=d, groups=gr)
    out = F.conv_transpose2d(x, wt, b, **kw)
    go = torch.randn(out.shape, generator=g, dtype=torch.float64)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, wt, b))
    F.conv_transpose2d(xr, wr, br, **kw).backward(go)
    xc = x.float().cuda().contiguous(memory_format=torch.channels_last)
    goc = go.float().cuda().contiguous(memory_format=torch.channels_last)
    for mask in ([False, True, False], [False, True, True], [True, True, True]):
        gi, gw, gb = torch.ops.convt.conv_transpose2d_backward(goc, xc, wt.float().cuda(), list(s), list(p), list(op),
                                                               gr, list(d), mask)
        err = ((gw.double().cpu() - wr.grad).norm() / wr.grad.norm()).item()
        print(k, s, gr, mask, f"grad_weight rel err {err:.2e}", flush=True)
        assert err < 5e-3
        if mask[2]:
            eb = ((gb.double().cpu() - br.grad).norm() / br.grad.norm()).item()
            assert eb < 1e-5, eb
torch.cuda.synchronize()
print("smoke ok")
