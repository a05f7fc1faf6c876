# Run VB: the summing columns copy as its own kernel (im2col_cl_taps_sums_kernel<T, KU>: 8 loads in flight per lane, 8 / KU pixels a warp step, occupancy-sized wave). Build; its tests + the columns / bias tests (4 shards); kernel times knob 0 against default; host split + CUDA API calls per step of the small training rows (ours, PyTorch), then our C++ trace.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 120 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused_columns_cl or bias_fused_ws_knob" > $R/tests_new.log 2>&1
echo "tests new $(( $(date +%s)-S )) s: $(tail -1 $R/tests_new.log)"; grep FAILED $R/tests_new.log | head; grep -m3 -A40 "^____" $R/tests_new.log | grep -E "^E " | cut -c1-300 | head -12; S=$(date +%s)
SPECS=""; for c in bfloat16:channels_last:fwdbwd float32:channels_last:fwdbwd; do for r in unet_up1 maskrcnn_mask unet_up4; do SPECS="$SPECS $r:$c"; done; done
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_on.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_on; do echo "== $f"; grep -h "^## \|im2col\|grad_bias" $R/$f.txt | cut -c1-110; done; S=$(date +%s)
HS="dcgan_g2:bfloat16:channels_last dcgan_g2:float32:nchw dcgan_g4:float32:nchw unet_up4:bfloat16:channels_last"
timeout 150 python scratch/lead/host_api.py $HS > $R/host_api.txt 2>&1; echo "host_api rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
CONVT_HOST_TRACE=1 HA_WHO=ours timeout 100 python scratch/lead/host_api.py $HS > $R/host_trace.txt 2>&1; echo "host trace rc=$? $(( $(date +%s)-S )) s"
cat $R/host_api.txt | cut -c1-120; cp $R/kt_*.txt $R/host_*.txt $OUT/
for j in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 120 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias or columns or channels_last_weight or kernel_equals_stride or sanitizer_smoke" --shard $j/4 > $R/tests_$j.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for j in 0 1 2 3; do echo "shard $j: $(tail -1 $R/tests_$j.log)"; grep FAILED $R/tests_$j.log | head -5; done
cd $OUT && tar czf logs.tgz r && rm -rf r
