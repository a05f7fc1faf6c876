# Run SE: build main + paired phases v4 (vector runs in the epilogue, tile cost by store width); sanitizers on the paired smoke (CONVT_FWD_WS_PAIR=all); tile sweep; tests/test_cuda.py whole (5 shards).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
CONVT_FWD_WS_PAIR=all timeout 60 compute-sanitizer --tool memcheck python scratch/lead/pair_smoke.py > $R/san.txt 2>&1; echo "memcheck rc=$? $(( $(date +%s)-S )) s"; tail -1 $R/san.txt
CONVT_FWD_WS_PAIR=all timeout 90 compute-sanitizer --tool racecheck python scratch/lead/pair_smoke.py > $R/race.txt 2>&1; echo "racecheck rc=$? $(( $(date +%s)-S )) s"; tail -1 $R/race.txt; grep torch $R/san.txt | cut -c1-100
S=$(date +%s)
KF="kb2_2_s2_op1:float32:nchw:fwd kb2_5_k4_s2:float32:nchw:fwd kb2_93_k4_s2:float32:nchw:fwd kb2_2_s2_op1:bfloat16:nchw:fwd kb2_5_k4_s2:bfloat16:nchw:fwd kb2_93_k4_s2:bfloat16:nchw:fwd"
for tx in 0 22 29 128; do
  CONVT_FWD_WS_TX=$tx KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $KF > $R/sweep_$tx.txt 2>&1
  echo "== TX=$tx: $(grep -A1 '^## ' $R/sweep_$tx.txt | grep wgmma_ws | awk '{printf "%s ", $1}') | total: $(grep '^## ' $R/sweep_$tx.txt | awk '{printf "%s ", $(NF-1)}')"
done
echo "(rows: kb2_2 kb2_5 kb2_93 float32, then bf16; kernel us | device us per forward)"
echo "sweep $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
cd $OUT && tar czf logs.tgz r && rm -rf r
