# Run YI (main d0195a9): wide tiles (CONVT_FWD_WS_WIDE=all) against the rule on the float32 rows whose weights are
# streamed with every stage (kb1_69, kb1_65), four alternating passes, kernel us.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="kb1_69_k3x5:float32:channels_last:fwd kb1_65_k3x7:float32:channels_last:fwd kb1_69_k3x5:float32:nchw:fwd kb1_69_k3x5:float32:channels_last:fwdbwd kb1_65_k3x7:bfloat16:channels_last:fwd"
for pass in 1 2 3 4; do for mode in rule all; do
  E="A=1"; [ $mode = all ] && E="CONVT_FWD_WS_WIDE=all"
  env $E KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $ROWS > $R/kt_${mode}_$pass.txt 2>&1
done; done
python - $R <<'PY'
import re, sys
R = sys.argv[1]
def parse(f):
    out, cur = {}, None
    for line in open(f):
        m = re.match(r"## (\S+) ours", line)
        if m: cur = m.group(1); out[cur] = []; continue
        m = re.match(r"\s+([\d.]+) us x(\d)\s+.*wgmma_ws_fwd_kernel<([^,]+), (\d)", line)
        if m and cur: out[cur].append(f"{float(m.group(1)):.0f}x{m.group(2)}k{m.group(4)}")
    return out
runs = {f"{k}_{p}": parse(f"{R}/kt_{k}_{p}.txt") for p in (1, 2, 3, 4) for k in ("rule", "all")}
for row in runs["rule_1"]:
    print(row); print("   " + "  ".join(f"{k}:{'/'.join(runs[k].get(row, []))}" for k in runs))
PY
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
