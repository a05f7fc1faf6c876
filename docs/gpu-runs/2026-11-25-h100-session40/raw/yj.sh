# Run YJ: wide tiles for float32 with streamed weights (kWideGainStreamed, uncommitted): tests/test_cuda.py whole
# (12 shards); kernel us of the kb1_69 / kb1_65 float32 rows (rule) and the wide-tile knob off for comparison.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done
S=$(date +%s)
ROWS="kb1_69_k3x5:float32:channels_last:fwd kb1_69_k3x5:float32:nchw:fwd kb1_65_k3x7:float32:channels_last:fwd"
for pass in 1 2; do
KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_rule_$pass.txt 2>&1; echo "--- rule $pass"; grep -E "##|wgmma_ws" $R/kt_rule_$pass.txt | cut -c1-110
CONVT_FWD_WS_WIDE=0 KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_wide0_$pass.txt 2>&1; echo "--- wide 0 $pass"; grep -E "##|wgmma_ws" $R/kt_wide0_$pass.txt | cut -c1-110
done
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
