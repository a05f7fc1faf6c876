# Compare two bench results.json (A, B): ours ms per (shape, dtype, layout, mode), B/A, and PyTorch's.
import json, sys
def load(p):
    d = json.load(open(p))
    rows = d if isinstance(d, list) else d.get("rows", d.get("results"))
    return {(r["shape"], r["dtype"], r["layout"], r["mode"]): r for r in rows}
a, b = load(sys.argv[1]), load(sys.argv[2])
print(f"{'shape':20s} {'dtype':9s} {'A ms':>8s} {'B ms':>8s} {'B/A':>6s} {'pt ms':>8s} {'A x':>6s} {'B x':>6s} errB")
for k in a:
    if k not in b: continue
    ra, rb = a[k], b[k]
    if ra.get("ours_ms") is None or rb.get("ours_ms") is None:
        print(k, ra.get("status"), rb.get("status")); continue
    print(f"{k[0]:20s} {k[1]:9s} {ra['ours_ms']:8.3f} {rb['ours_ms']:8.3f} {rb['ours_ms']/ra['ours_ms']:6.2f} {rb['pytorch_ms']:8.3f} {ra['speedup']:6.2f} {rb['speedup']:6.2f} {rb['rel_err']:.1e} {rb['status']}")
