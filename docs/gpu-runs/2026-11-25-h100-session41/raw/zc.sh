# Run ZC: host ops per training step (main), then tests/test_cuda.py whole on wip/epilogue-bounds (scratch/wip, built in ZA), 12 shards.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild; R=$OUT/r; mkdir -p $R; M=$PWD
S=$(date +%s)
PYTHONPATH=$M OUT=$R timeout 100 python scratch/lead/host_ops.py dcgan_g2:float32:nchw unet_up4:bfloat16:channels_last dcgan_g4:bfloat16:channels_last > $R/host_ops.txt 2>&1
echo "host_ops $(( $(date +%s)-S )) s"; grep -v Warn $R/host_ops.txt | cut -c1-130
S=$(date +%s); cd scratch/wip
for k in $(seq 0 11); do PYTHONPATH=$PWD OMP_NUM_THREADS=1 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in $(seq 0 11); do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done
cd $OUT && tar czf logs.tgz r && rm -rf r
