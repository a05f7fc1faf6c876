"""Spill loads/stores of kernels in a cuobjdump -sass listing: per function whose name holds one of
the patterns, counts of LDL / STL / HGMMA / WARPGROUP.DEPBAR and how many local accesses fall
between the first and last HGMMA (the main loop's region).
usage: python sass_spills.py all.sass pattern ..."""
import re, sys
text = open(sys.argv[1]).read()
pats = sys.argv[2:]
for block in re.split(r"\n\s*Function : ", text)[1:]:
    name = block.split("\n", 1)[0].strip()
    if not any(p in name for p in pats):
        continue
    ins = [l for l in block.split("\n") if re.search(r"/\*[0-9a-f]{4,}\*/", l)]
    idx = lambda op: [i for i, l in enumerate(ins) if re.search(rf"\b{op}\b", l)]
    hg = idx("HGMMA[.A-Z0-9x]*") or [i for i, l in enumerate(ins) if "HGMMA" in l]
    local = [i for i, l in enumerate(ins) if re.search(r"\b(LDL|STL)", l)]
    inside = [i for i in local if hg and hg[0] <= i <= hg[-1]]
    dep = sum("WARPGROUP.DEPBAR" in l for l in ins)
    short = re.sub(r"_ZN5convt3bwd.*?cu_[0-9a-f]+", "", name)[:80]
    print(f"{short}: {len(ins)} ins, HGMMA {sum('HGMMA' in l for l in ins)}, DEPBAR {dep}, "
          f"LDL/STL {len(local)} ({len(inside)} between the HGMMAs)")
