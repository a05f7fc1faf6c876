# Run UH (two calls on one machine): grad_bias summed by the copies, second form of the paired kernel's sums (runs cut anywhere). $1 = 0: build, targeted tests, kernel times, test_cuda shards 0-5 of 12; $1 = 1: shards 6-11, training benchmarks (float32, bf16 NCHW).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
HALF=${1:-0}
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
if [ "$HALF" = 0 ]; then
  OMP_NUM_THREADS=8 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused or paired_columns or columns_plane" > $R/tests_bias.log 2>&1
  echo "tests bias $(( $(date +%s)-S )) s: $(tail -1 $R/tests_bias.log)"; grep FAILED $R/tests_bias.log | head; grep -m1 -A40 "^____" $R/tests_bias.log | grep "^E " | head -20; S=$(date +%s)
  SH="maskrcnn_mask:float32:nchw:fwdbwd maskrcnn_mask:bfloat16:nchw:fwdbwd unet_up1:bfloat16:nchw:fwdbwd unet_up4:bfloat16:nchw:fwdbwd unet_up1:float32:nchw:fwdbwd"
  KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SH > $R/kt_on.txt 2>&1
  CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SH > $R/kt_off.txt 2>&1
  CONVT_BWD_S2D=on KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py unet_up1:float32:nchw:fwdbwd > $R/kt_s2d_on.txt 2>&1
  echo "kt $(( $(date +%s)-S )) s"
  for f in kt_off kt_on kt_s2d_on; do echo "== $f"; grep -h "^## \|nchw_to_nhwc\|grad_bias\|space_to_depth" $R/$f.txt | cut -c1-110; done
fi
S=$(date +%s)
for j in 0 1 2 3 4 5; do k=$((6*HALF+j)); OMP_NUM_THREADS=2 timeout -s INT 270 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda half $HALF $(( $(date +%s)-S )) s"; for f in $R/test_cuda_*_of_12.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
if [ "$HALF" = 1 ]; then
  OMP_NUM_THREADS=8 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "s2d or columns or kernel_equals_stride or bias or stride_paired or S2D" > $R/tests_s2d_rule.log 2>&1
  echo "tests s2d rule $(( $(date +%s)-S )) s: $(tail -1 $R/tests_s2d_rule.log)"; grep FAILED $R/tests_s2d_rule.log | head; S=$(date +%s)
  KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py unet_up1:float32:nchw:fwdbwd unet_up1:float32:nchw:fwd > $R/kt_s2d_rule.txt 2>&1; grep -h "^## " $R/kt_s2d_rule.txt
  timeout -s INT 120 python -m convt_op bench --configs float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd --device-time --out $OUT/train > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
  grep -A4 "geomean speedup" $OUT/train/results.md | tail -2
fi
cd $OUT && tar czf logs.tgz r && rm -rf r
