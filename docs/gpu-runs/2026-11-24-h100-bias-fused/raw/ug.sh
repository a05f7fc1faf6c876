# Run UG: grad_bias summed by the channels_last copy of grad_output (layout.cu) and by the paired space-to-depth copy (backward_s2d_gemm.cu). Build, targeted tests, kernel times with the fusion on / off.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="bias or via_channels_last or columns or kernel_equals_stride or channels_last_weight or sanitizer_smoke or layout or s2d"
for j in 0 1 2 3; do OMP_NUM_THREADS=3 timeout -s INT 280 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $j/4 > $R/tests_$j.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for f in $R/tests_*.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -5; done
grep -m1 -A60 "^____" $R/tests_*.log | head -80; S=$(date +%s)
SH="kb2_5_k4_s2:float32:nchw:fwdbwd kb2_93_k4_s2:float32:nchw:fwdbwd maskrcnn_mask:float32:nchw:fwdbwd unet_up4:float32:nchw:fwdbwd kb1_69_k3x5:float32:nchw:fwdbwd kb2_5_k4_s2:bfloat16:nchw:fwdbwd maskrcnn_mask:bfloat16:nchw:fwdbwd unet_up1:bfloat16:nchw:fwdbwd"
KT_OURS_ONLY=1 timeout 150 python scripts/kernel_times.py $SH > $R/kt_on.txt 2>&1
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 150 python scripts/kernel_times.py $SH > $R/kt_off.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"
for f in kt_off kt_on; do echo "== $f"; grep -h "^## \|nchw_to_nhwc\|grad_bias\|space_to_depth" $R/$f.txt | cut -c1-110; done
cd $OUT && tar czf logs.tgz r && rm -rf r
