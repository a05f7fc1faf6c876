# Emulates grad_input_narrow_kernel's work split and index math (float64) against autograd.
import torch, torch.nn.functional as F, itertools, math
kRows, kCit, kBatch = 4, 8, 4
def model(go, w, g):
    N, Cout, Hout, Wout = go.shape; Cin, Cout_g, KH, KW = w.shape
    H, W, SH, SW, PH, PW, DH, DW, groups = g
    Cin_g = Cin // groups; cib_n = math.ceil(Cin_g / kCit)
    gi = torch.full((N, Cin, H, W), float('nan'), dtype=torch.float64)
    items = math.ceil(H / kRows) * W
    for n, grp, cib in itertools.product(range(N), range(groups), range(cib_n)):
        ci_l0 = cib * kCit
        ws = torch.zeros(KH * KW, Cout_g, kCit, dtype=torch.float64)
        for j in range(kCit):
            if ci_l0 + j < Cin_g:
                ws[:, :, j] = w[grp * Cin_g + ci_l0 + j].permute(1, 2, 0).reshape(KH * KW, Cout_g)
        for item in range(items):
            ix = item % W; iy0 = (item // W) * kRows
            acc = torch.zeros(kRows, kCit, dtype=torch.float64)
            for ky in range(KH):
                oy = iy0 * SH - PH + ky * DH
                valid = [iy0 + r < H and 0 <= oy + r * SH < Hout for r in range(kRows)]
                if not any(valid): continue
                for kx in range(KW):
                    ox = ix * SW - PW + kx * DW
                    if ox < 0 or ox >= Wout: continue
                    for co in range(Cout_g):
                        xv = torch.tensor([go[n, grp * Cout_g + co, oy + r * SH, ox].item() if valid[r] else 0. for r in range(kRows)], dtype=torch.float64)
                        acc += xv[:, None] * ws[ky * KW + kx, co][None, :]
            for r in range(kRows):
                if iy0 + r >= H: break
                for j in range(kCit):
                    if ci_l0 + j < Cin_g: gi[n, grp * Cin_g + ci_l0 + j, iy0 + r, ix] = acc[r, j]
    return gi
cases = [(2, 32, 64, 9, 21, (3, 5), (2, 3), (1, 2), (0, 0), (2, 1), 4), (2, 6, 10, 7, 13, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 2),
         (1, 8, 16, 6, 35, (3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1), (2, 8, 7, 8, 17, (3, 3), (2, 2), (0, 0), (0, 0), (1, 1), 1),
         (2, 5, 24, 10, 40, (2, 4), (3, 1), (2, 3), (0, 0), (3, 2), 1), (1, 16, 16, 5, 30, (1, 3), (1, 2), (0, 1), (0, 1), (1, 1), 2)]
for N, Cin, Cout, H, W, k, s, p, op, d, groups in cases:
    x = torch.randn(N, Cin, H, W, dtype=torch.float64, requires_grad=True)
    w = torch.randn(Cin, Cout // groups, *k, dtype=torch.float64)
    out = F.conv_transpose2d(x, w, None, s, p, op, groups, d)
    go = torch.randn_like(out); out.backward(go)
    gi = model(go, w, (H, W, s[0], s[1], p[0], p[1], d[0], d[1], groups))
    print((N, Cin, Cout, H, W, k, s, p, d, groups), "max err", (gi - x.grad).abs().max().item(), "nan", gi.isnan().any().item())
