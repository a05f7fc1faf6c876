# Run UD (two calls): the session's final code: tests/test_cuda.py whole as 12 shards, half per call ($1 = 0: shards 0-5, 1: shards 6-11); the second call also the NCHW grad_weight kernels alone (float32, bf16).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
HALF=${1:-0}
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for j in 0 1 2 3 4 5; do k=$((6*HALF+j)); OMP_NUM_THREADS=2 timeout -s INT 300 python -m pytest -q -rf --durations=3 tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda half $HALF $(( $(date +%s)-S )) s"; for f in $R/test_cuda_*_of_12.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f; done; S=$(date +%s)
if [ "$HALF" = 1 ]; then
  timeout -s INT 100 python -m convt_op bench --configs float32:nchw:grad_weight,bfloat16:nchw:grad_weight --out $OUT/gw_kernels > $R/bench_gw.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
  grep -A4 "geomean speedup" $OUT/gw_kernels/results.md | tail -2
fi
cd $OUT && tar czf logs.tgz r && rm -rf r
