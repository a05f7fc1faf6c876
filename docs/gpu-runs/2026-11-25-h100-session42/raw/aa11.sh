# Call AA11: build wip/gw-ws-narrow-images (scratch/wip), kernel breakdown of the DCGAN 16-bit channels_last training rows, then tests/test_cuda.py whole on it.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD; cd scratch/wip; export PYTHONPATH=$PWD
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
timeout 90 python $M/scripts/kernel_times.py dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd dcgan_g4:float16:channels_last:fwdbwd > $R/kt_wip.txt 2>&1
grep -v Warning $R/kt_wip.txt | grep -v _warn_once | cut -c1-140
S=$(date +%s)
for k in $(seq 0 11); do OMP_NUM_THREADS=1 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in $(seq 0 11); do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep -E "FAILED|Interrupt" $f | head -3; done
cd $OUT && tar czf logs.tgz r && rm -rf r
