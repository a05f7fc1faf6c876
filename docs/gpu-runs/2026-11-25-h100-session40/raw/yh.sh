# Run YH (main d0195a9): wide tiles everywhere they cost less (CONVT_FWD_WS_WIDE=all) against the default rule
# (wide only where they cut the modelled cost by 20%), kernel us of the channels_last forward rows; two passes each.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="kb1_57_square:bfloat16:channels_last:fwd kb1_65_k3x7:bfloat16:channels_last:fwd kb1_69_k3x5:bfloat16:channels_last:fwd kb1_71_rect_k3:bfloat16:channels_last:fwd kb1_78_pad_k3x7:bfloat16:channels_last:fwd kb2_10_k3_p1:bfloat16:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwd kb2_5_k4_s2:bfloat16:channels_last:fwd kb2_93_k4_s2:bfloat16:channels_last:fwd kb1_69_k3x5:float32:channels_last:fwd kb1_71_rect_k3:float32:channels_last:fwd kb2_2_s2_op1:float32:channels_last:fwd"
for pass in 1 2; do for mode in rule all; do
  E="A=1"; [ $mode = all ] && E="CONVT_FWD_WS_WIDE=all"
  env $E KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $ROWS > $R/kt_${mode}_$pass.txt 2>&1
done; done
python - $R <<'PY'
import re, sys, glob
R = sys.argv[1]
def parse(f):
    out, cur = {}, None
    for line in open(f):
        m = re.match(r"## (\S+) ours", line)
        if m: cur = m.group(1); continue
        m = re.match(r"\s+([\d.]+) us x1\s+void convt::fwd::\S*wgmma_ws_fwd_kernel<([^,]+), (\d)", line)
        if m and cur and cur not in out: out[cur] = (float(m.group(1)), m.group(3))
    return out
runs = {k: parse(f"{R}/kt_{k}.txt") for k in ("rule_1", "all_1", "rule_2", "all_2")}
print(f"{'row':45s} {'rule_1':>12s} {'all_1':>12s} {'rule_2':>12s} {'all_2':>12s}")
for row in runs["rule_1"]:
    print(f"{row:45s} " + " ".join(f"{runs[k].get(row, (0, '?'))[0]:9.1f} k{runs[k].get(row, (0, '?'))[1]}" for k in runs))
PY
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
