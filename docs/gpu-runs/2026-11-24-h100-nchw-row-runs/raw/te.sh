# Run TE: HEAD (16-bit NCHW runs, route rule): whole tests/test_cuda.py (5 shards), then the NCHW benchmark configs with --device-time.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 255 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_cuda_$k.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_cuda_$k.log; grep FAILED $R/test_cuda_$k.log; done; S=$(date +%s)
timeout 170 python -m convt_op bench --configs float32:nchw:fwd,bfloat16:nchw:fwd,float16:nchw:fwd,float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd --device-time --out $OUT/nchw > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
tail -12 $R/bench.log
cd $OUT && tar czf logs.tgz r && rm -rf r
