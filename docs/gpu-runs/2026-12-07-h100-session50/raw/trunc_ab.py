"""float32 channels_last grad_weight / grad_bias on the channels_last rows kernel for cases that cover its
instantiations (tiles 32 / 64, 1-4 taps a block, one and two planes, grad_bias fused, groups, partial tiles).
usage: python wide_ab.py OUT.pt [OTHER.pt]: checks against float64 on the CPU, saves the results to OUT.pt and,
given OTHER.pt (a run with another CONVT_BWD_GW_ROWS_CL_TF32), checks that both are bit-identical."""
import sys, os, torch, torch.nn.functional as F
import convt_op  # noqa: F401
torch.backends.cudnn.allow_tf32 = True
cases = [  # N, Cin, Cout, H, W, k, s, p, op, d, groups
    (1, 64, 64, 5, 40, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    (1, 64, 36, 4, 37, (3, 5), (1, 1), (1, 2), (0, 0), (1, 1), 1),
    (1, 48, 64, 3, 33, (3, 7), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (1, 32, 32, 4, 35, (3, 3), (2, 1), (1, 1), (1, 0), (1, 1), 1),
    (1, 64, 64, 4, 40, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 2),
    (1, 64, 32, 3, 40, (3, 3), (1, 1), (4, 4), (0, 0), (4, 4), 1),
    (2, 32, 28, 4, 45, (2, 4), (2, 2), (1, 1), (0, 0), (1, 1), 1),
    (1, 24, 32, 5, 33, (2, 2), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (1, 32, 20, 3, 70, (1, 1), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (1, 96, 80, 3, 37, (2, 1), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    (1, 72, 128, 3, 36, (3, 2), (2, 2), (0, 0), (1, 1), (1, 1), 1),
    (2, 64, 64, 6, 40, (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), 1),
]
res, worst = {}, 0.0
for i, (n, ci, co, h, w, k, s, p, op, d, gr) in enumerate(cases):
    g = torch.Generator().manual_seed(i)
    x = torch.randn(n, ci, h, w, generator=g, dtype=torch.float64)
    wt = torch.randn(ci, co // gr, *k, generator=g, dtype=torch.float64)
    b = torch.randn(co, generator=g, dtype=torch.float64)
    kw = dict(stride=s, padding=p, output_padding=op, dilation=d, groups=gr)
    go = torch.randn(F.conv_transpose2d(x, wt, b, **kw).shape, generator=g, dtype=torch.float64)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, wt, b))
    F.conv_transpose2d(xr, wr, br, **kw).backward(go)
    xc = x.float().cuda().contiguous(memory_format=torch.channels_last)
    goc = go.float().cuda().contiguous(memory_format=torch.channels_last)
    for mask in ([False, True, False], [False, True, True]):
        _, gw, gb = torch.ops.convt.conv_transpose2d_backward(goc, xc, wt.float().cuda(), list(s), list(p), list(op),
                                                              gr, list(d), mask)
        err = ((gw.double().cpu() - wr.grad).norm() / wr.grad.norm()).item()
        worst = max(worst, err)
        assert err < 5e-3, (i, err)
        res[f"{i}_{mask[2]}_w"] = gw.cpu()
        if mask[2]:
            eb = ((gb.double().cpu() - br.grad).norm() / br.grad.norm()).item()
            assert eb < 1e-5, (i, eb)
            res[f"{i}_b"] = gb.cpu()
torch.save(res, sys.argv[1])
print(f"{len(cases)} cases, worst grad_weight rel err {worst:.2e} (WIDE={os.environ.get('CONVT_BWD_GW_ROWS_CL_TF32', 'default')})")
if len(sys.argv) > 2:
    other = torch.load(sys.argv[2])
    same = [k for k in res if torch.equal(res[k], other[k])]
    print(f"bit-identical to {sys.argv[2]}: {len(same)} of {len(res)}", "" if len(same) == len(res) else
          [k for k in res if k not in same])
