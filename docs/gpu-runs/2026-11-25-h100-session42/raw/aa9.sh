# Call AA9: build main, then kb1_69's plans under the ws knobs (kernel times, ours only), baseline first and last.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16 PYTHONPATH=$PWD; R=$OUT/r; mkdir -p $R
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
ROWS="kb1_69_k3x5:float32:nchw:fwd kb1_69_k3x5:float32:channels_last:fwd kb1_69_k3x5:bfloat16:channels_last:fwd kb1_69_k3x5:bfloat16:nchw:fwd"
i=0
for knob in "" CONVT_FWD_WS_NCHW_QUARTERS=0 CONVT_FWD_WS_NCHW_QUARTERS=all CONVT_FWD_WS_WIDE=0 CONVT_FWD_WS_WIDE=all CONVT_FWD_WS_WEIGHTS=stream CONVT_FWD_WS_HALF_STAGE=all CONVT_FWD_WS_TX=30 CONVT_FWD_WS_TX=52 CONVT_FWD_WS_TX=60 CONVT_FWD_WS_TX=65 ""; do
  i=$((i+1)); env $knob KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $ROWS > $R/kt_$i.txt 2>&1
  echo "== $i ${knob:-base}: $(grep '##' $R/kt_$i.txt | sed -E 's/.*## kb1_69_k3x5:([a-z0-9]+):([a-z_]+):fwd ours: wall ([0-9]+) us\/step, device ([0-9]+) us\/step.*/\1 \2 \4/' | tr '\n' ';')"
  grep -E "Error|error" $R/kt_$i.txt | head -2
done
cd $OUT && tar czf logs.tgz r && rm -rf r
