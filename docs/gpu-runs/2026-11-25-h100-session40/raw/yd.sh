# Run YD: half staging with the final rule (only where the whole tiles leave 2 stages; uncommitted): kernel times,
# rule vs =0 on the 16-bit channels_last forward and training rows; tests/test_cuda.py whole (12 shards).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done
S=$(date +%s)
ROWS="kb1_65_k3x7:bfloat16:channels_last:fwd kb1_69_k3x5:bfloat16:channels_last:fwd kb1_65_k3x7:float16:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwdbwd kb2_5_k4_s2:bfloat16:channels_last:fwdbwd kb2_93_k4_s2:bfloat16:channels_last:fwdbwd"
KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $ROWS > $R/kt_rule.txt 2>&1; echo "--- rule"; grep -E "##|   " $R/kt_rule.txt | grep -v pack_weights | cut -c1-120 | head -40
CONVT_FWD_WS_HALF_STAGE=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $ROWS > $R/kt_whole.txt 2>&1; echo "--- whole (=0)"; grep -E "##|   " $R/kt_whole.txt | grep -v pack_weights | cut -c1-120 | head -40
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
