# Run UE (two calls on one machine): depthwise grad_bias fused into the plane kernel. $1 = 0: build, depthwise / bias tests, kernel times, tests/test_cuda.py shards 0-5 of 12; $1 = 1: shards 6-11, training benchmarks (float32, bf16 NCHW).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
HALF=${1:-0}
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
if [ "$HALF" = 0 ]; then
  OMP_NUM_THREADS=8 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "depthwise or bias or sanitizer_smoke" > $R/tests_dw.log 2>&1
  echo "tests dw $(( $(date +%s)-S )) s: $(tail -1 $R/tests_dw.log)"; grep FAILED $R/tests_dw.log | head; grep -m1 -A40 "^____" $R/tests_dw.log | head -60; S=$(date +%s)
  KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py depthwise_s2:float32:nchw:fwdbwd depthwise_s2:bfloat16:nchw:fwdbwd depthwise_s2:float32:channels_last:fwdbwd > $R/kt_dw.txt 2>&1
  grep -h "^## \|depthwise\|grad_bias" $R/kt_dw.txt | cut -c1-120
fi
S=$(date +%s)
for j in 0 1 2 3 4 5; do k=$((6*HALF+j)); OMP_NUM_THREADS=2 timeout -s INT 260 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda half $HALF $(( $(date +%s)-S )) s"; for f in $R/test_cuda_*_of_12.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
if [ "$HALF" = 1 ]; then
  timeout -s INT 120 python -m convt_op bench --configs float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd --device-time --out $OUT/train > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
  grep -A4 "geomean speedup" $OUT/train/results.md | tail -2
fi
cd $OUT && tar czf logs.tgz r && rm -rf r
