# The ws forward planner's cost model (plan_ws: taps x tiles x N + kTileCostTaps x 256 x tiles; short tiles left out)
# with and without exact-fit MMA widths N, for the stride-1 suite shapes. CPU only; run from the repository root
# (reads convt_op/bench_suite.json).
import math, json
d=json.load(open('convt_op/bench_suite.json'))
def plan(OH, OW, KH, KW, taps, fitset, kTile=9):
    halo_y, halo_x = KH-1, KW-1
    my, mx = OH, OW
    best=None
    for tx in range(1, 257-halo_x):
        P = tx+halo_x
        # full/short (ignore short for simplicity)
        ty = 256//P
        if ty < 1: continue
        trows, tcols = math.ceil(my/ty), math.ceil(mx/tx)
        tiles = trows*tcols
        cost = taps*tiles*256 + kTile*256*tiles
        c=(cost, tiles, tx, ty, 256)
        if best is None or c < best: best=c
        for ty2 in range(1, 256//P+1):
            N = math.ceil(ty2*P/8)*8
            if N not in fitset: continue
            trows, tcols = math.ceil(my/ty2), math.ceil(mx/tx)
            tiles = trows*tcols
            cost = taps*tiles*N + kTile*256*tiles
            c=(cost, tiles, tx, ty2, N)
            if c < best: best=c
    return best
for s in d['shapes']:
    if s['stride'] != [1,1] or s['groups'] != 1: continue
    KH,KW = s['kernel']; ph,pw = s['padding']; dh,dw = s['dilation']
    OH = (s['H']-1) - 2*ph + dh*(KH-1) + 1; OW = (s['W']-1) - 2*pw + dw*(KW-1) + 1
    # halo uses dilation; approximate with dilation 1 shapes only
    if dh != 1 or dw != 1: continue
    base = plan(OH, OW, KH, KW, KH*KW, set())
    for fs in ({208,224}, {208,224,240}, set(range(136,256,8))):
        f = plan(OH, OW, KH, KW, KH*KW, fs)
        print(s['name'], OH, OW, 'base', base, 'fit', sorted(fs)[:3], f, 'gain %.1f%%' % (100*(1-f[0]/base[0])))
