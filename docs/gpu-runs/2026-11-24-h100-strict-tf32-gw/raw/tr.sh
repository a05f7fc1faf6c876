# Run TR: branch wip/strict-3xtf32-rows-rule + stacked split (no transpose before the strict flat split) + CONVT_GEMM_SLICE_KB: kernel times by slice size, whole tests/test_cuda.py (6 shards).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="unet_up4:float32:nchw:fwd unet_up4:bfloat16:nchw:fwd dcgan_g2:float32:nchw:fwd dcgan_g2:bfloat16:nchw:fwd dcgan_g2:bfloat16:channels_last:fwd unet_up4:float32:channels_last:fwd dcgan_g4:float32strict:nchw:fwd maskrcnn_mask:float32strict:nchw:fwd unet_up4:float32strict:nchw:fwd dcgan_g2:float32strict:nchw:fwd"
export KT_OURS_ONLY=1
for kb in 0 8192 16384 32768; do
  if [ $kb = 0 ]; then timeout 45 python scripts/kernel_times.py $ROWS > $R/kt_s$kb.txt 2>&1; else CONVT_GEMM_SLICE_KB=$kb timeout 45 python scripts/kernel_times.py $ROWS > $R/kt_s$kb.txt 2>&1; fi
done
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
paste <(grep "^## " $R/kt_s0.txt | sed 's/## //; s/ ours: wall [0-9]* us\/step, device / /; s/ us\/step//') <(grep "^## " $R/kt_s8192.txt | sed 's/.*device //; s/ us\/step//') <(grep "^## " $R/kt_s16384.txt | sed 's/.*device //; s/ us\/step//') <(grep "^## " $R/kt_s32768.txt | sed 's/.*device //; s/ us\/step//') | awk '{printf "%-42s def %6s  8MB %6s  16MB %6s  32MB %6s\n", $1, $2, $3, $4, $5}'
for f in s0 s16384; do grep -h -A6 "## dcgan_g4:float32strict\|## unet_up4:float32:nchw\|## unet_up4:bfloat16:nchw" $R/kt_$f.txt | cut -c1-120; done
unset KT_OURS_ONLY
(cd $OUT && tar czf logs.tgz r)
for k in 0 1 2 3 4 5; do OMP_NUM_THREADS=2 timeout -s INT 290 python -m pytest -q -rf --durations=8 tests/test_cuda.py -p no:cacheprovider --shard $k/6 > $R/test_cuda_$k.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5; do tail -1 $R/test_cuda_$k.log; grep FAILED $R/test_cuda_$k.log; done
cd $OUT && tar czf logs.tgz r && rm -rf r
