# Run TJ: main + working tree (quarter staging merged; channels_last gather in 16-byte vectors; NCHW small-plane gather): whole tests/test_cuda.py (5 shards), gather A/B kernel times.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="dcgan_g2:float32:nchw:fwd dcgan_g2:bfloat16:nchw:fwd dcgan_g2:float16:nchw:fwd dcgan_g2:bfloat16:channels_last:fwd dcgan_g2:float16:channels_last:fwd dcgan_g2:float32:channels_last:fwd unet_up4:float32:channels_last:fwd maskrcnn_mask:float32:channels_last:fwd dcgan_g2:float32:nchw:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd"
export KT_OURS_ONLY=1
timeout 55 python scripts/kernel_times.py $ROWS > $R/kt_new.txt 2>&1
CONVT_FWD_GATHER_VEC=0 CONVT_FWD_GATHER_SMALL_PLANES=0 timeout 55 python scripts/kernel_times.py $ROWS > $R/kt_old.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
paste <(grep "^## " $R/kt_old.txt | sed 's/## //; s/ ours: wall [0-9]* us\/step, device / /; s/ us\/step//') <(grep "^## " $R/kt_new.txt | sed 's/.*device //; s/ us\/step//') | awk '{printf "%-42s old %7s new %7s  %.3f\n", $1, $2, $3, $3/$2}'
grep -h "col2im" $R/kt_old.txt $R/kt_new.txt | cut -c1-90
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_cuda_$k.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_cuda_$k.log; grep FAILED $R/test_cuda_$k.log; done; grep -h "gather" $R/test_cuda_*.log | head
cd $OUT && tar czf logs.tgz r && rm -rf r
