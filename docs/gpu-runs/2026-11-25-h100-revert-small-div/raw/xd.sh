# Run XD: main with the revert of 67fea80 / 6e5c5f7 (tall tiles, 64-byte rows: forward_wgmma_ws.cu back to d7a1115's; uncommitted):
# kernel times of XC's rows and two more, then tests/test_cuda.py whole (12 shards).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="kb1_71_rect_k3:float32:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwd kb1_65_k3x7:bfloat16:channels_last:fwd kb1_57_square:float32:channels_last:fwd kb2_2_s2_op1:float32:channels_last:fwd dcgan_g4:bfloat16:channels_last:fwd"
KT_OURS_ONLY=1 timeout 120 python scripts/kernel_times.py $ROWS > $R/kt_reverted.txt 2>&1; grep -E "##|   " $R/kt_reverted.txt | cut -c1-110 | head -24
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done
cd $OUT && tar czf logs.tgz r && rm -rf r
