# Run SD: build main + paired phases v3 (one-row tiles up to 128 wide, row-run cost in the planner, pairing above 40 MB only); targeted tests; sanitizers on a paired smoke (CONVT_FWD_WS_PAIR=all); tile-width sweep (CONVT_FWD_WS_TX) of the paired kernel; training rows.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="via_channels_last or paired or grad_weight_nchw_via or ws_tf32 or wgmma_ws or column_phase"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
CONVT_FWD_WS_PAIR=all timeout 100 compute-sanitizer --tool memcheck python scratch/lead/pair_smoke.py > $R/san.txt 2>&1; echo "memcheck rc=$? $(( $(date +%s)-S )) s"; tail -1 $R/san.txt
CONVT_FWD_WS_PAIR=all timeout 150 compute-sanitizer --tool racecheck python scratch/lead/pair_smoke.py > $R/race.txt 2>&1; echo "racecheck rc=$? $(( $(date +%s)-S )) s"; tail -1 $R/race.txt; grep torch $R/san.txt | cut -c1-100
S=$(date +%s)
KF="kb2_2_s2_op1:float32:nchw:fwd kb2_5_k4_s2:float32:nchw:fwd kb2_93_k4_s2:float32:nchw:fwd kb2_2_s2_op1:bfloat16:nchw:fwd kb2_5_k4_s2:bfloat16:nchw:fwd kb2_93_k4_s2:bfloat16:nchw:fwd"
for tx in 0 16 22 29 33 52 65 86 128; do
  CONVT_FWD_WS_TX=$tx KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $KF > $R/sweep_$tx.txt 2>&1
  echo "== TX=$tx: $(grep -A1 '^## ' $R/sweep_$tx.txt | grep wgmma_ws | awk '{printf "%s ", $1}')"
done
echo "(rows: kb2_2 kb2_5 kb2_93 float32, then bf16; kernel us)"
echo "sweep $(( $(date +%s)-S )) s"; S=$(date +%s)
KT="kb2_2_s2_op1:float32:nchw:fwdbwd kb2_5_k4_s2:float32:nchw:fwdbwd kb2_93_k4_s2:float32:nchw:fwdbwd kb2_2_s2_op1:bfloat16:nchw:fwdbwd kb2_5_k4_s2:bfloat16:nchw:fwdbwd kb2_93_k4_s2:bfloat16:nchw:fwdbwd dcgan_g4:float32:nchw:fwd dcgan_g4:bfloat16:nchw:fwd"
timeout 150 python scripts/kernel_times.py $KT > $R/kt.txt 2>&1; echo "== kt"; grep -E "^## " $R/kt.txt | cut -c1-110
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
