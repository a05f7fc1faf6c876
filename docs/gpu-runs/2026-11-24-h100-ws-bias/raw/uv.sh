# Run UV (two calls): grad_bias in the ws grad_weight kernel, m64n8k16 wgmma against ones with the consumers sharing each row's runs (uncommitted on 03b09a7). $1 = 0: build, ws bias tests, kernel times (CONVT_BWD_BIAS_FUSED=0 / default), test_cuda shards 0-5 of 12; $1 = 1: shards 6-11, bf16 / fp16 channels_last training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
HALF=${1:-0}
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
if [ "$HALF" = 0 ]; then
  OMP_NUM_THREADS=8 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused_ws" > $R/tests_ws_bias.log 2>&1
  echo "tests ws bias $(( $(date +%s)-S )) s: $(tail -1 $R/tests_ws_bias.log)"; grep FAILED $R/tests_ws_bias.log | head; S=$(date +%s)
  SPECS=""; for r in kb2_2_s2_op1 kb2_5_k4_s2 kb2_10_k3_p1 kb2_93_k4_s2; do SPECS="$SPECS $r:bfloat16:channels_last:fwdbwd"; done; SPECS="$SPECS kb2_5_k4_s2:float16:channels_last:fwdbwd kb2_10_k3_p1:float16:channels_last:fwdbwd"
  CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
  KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_on.txt 2>&1
  echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_on; do echo "== $f"; grep -h "^## \|grad_weight_ws\|grad_bias_partial" $R/$f.txt | cut -c1-100; done
fi
S=$(date +%s)
for j in 0 1 2 3 4 5; do k=$((6*HALF+j)); OMP_NUM_THREADS=2 timeout -s INT 270 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda half $HALF $(( $(date +%s)-S )) s"; for f in $R/test_cuda_*_of_12.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
if [ "$HALF" = 1 ]; then
  timeout -s INT 150 python -m convt_op bench --configs bfloat16:channels_last:fwdbwd,float16:channels_last:fwdbwd --device-time --out $OUT/cl_training > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
  grep -A4 "geomean speedup" $OUT/cl_training/results.md | tail -3
fi
cd $OUT && tar czf logs.tgz r && rm -rf r
