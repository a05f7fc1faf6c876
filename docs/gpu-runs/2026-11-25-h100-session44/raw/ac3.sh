# Call AC3 (fresh machine): build main; each backward kernel alone against its floor (float32 NCHW, bf16 NCHW,
# bf16 channels_last; grad_input and grad_weight); ncu source counters of the ws forward on kb1_69 bf16 CL.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
timeout -s INT 260 env PYTHONPATH=$M python -m convt_op bench --configs float32:nchw:grad_input,float32:nchw:grad_weight,bfloat16:nchw:grad_input,bfloat16:nchw:grad_weight,bfloat16:channels_last:grad_input,bfloat16:channels_last:grad_weight --device-time --out $OUT/bk > $R/bk.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A8 "geomean speedup" $OUT/bk/results.md | tail -7
timeout 120 ncu --clock-control none --kernel-name regex:wgmma_ws_fwd_kernel --launch-skip 3 --launch-count 1 --section WarpStateStats --section SourceCounters --section SpeedOfLight --export $R/kb169 env PYTHONPATH=$M:$M/scratch/lead python scratch/lead/ncu_ws.py kb1_69_k3x5 bfloat16 channels_last > $R/ncu.log 2>&1; echo "ncu rc=$? $(( $(date +%s)-S )) s"
ncu --import $R/kb169.ncu-rep --page details > $R/details.txt 2>&1
ncu --import $R/kb169.ncu-rep --page source --csv --print-source sass > $R/src.csv 2>&1; echo "src rc=$? lines $(wc -l < $R/src.csv)"
grep -E "Duration|SM Frequency|Tensor|Warp Cycles|Stall|Issued|Eligible" $R/details.txt | head -30
python3 - <<'PY' $R/src.csv
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr_i = next(i for i, r in enumerate(rows) if any("Warp Stall Sampling" in c for c in r))
h = rows[hdr_i]; print("columns:", [c for c in h][:40])
ci = [i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All")][0]
src = [i for i, c in enumerate(h) if c == "Source"][0]
data = [r for r in rows[hdr_i + 1:] if len(r) > ci and r[ci].replace('.', '').isdigit()]
tot = sum(float(r[ci]) for r in data) or 1
for r in sorted(data, key=lambda r: -float(r[ci]))[:40]:
    print(f"{100*float(r[ci])/tot:5.1f}%  {r[0]:>6} {r[src][:90]}")
PY
cd $OUT && tar czf r.tgz r && rm -rf r; echo "total $(( $(date +%s)-S )) s"
