# Run UO: grad_bias summed by the ws grad_weight kernel's producer warps (uncommitted on 03b09a7). Build; targeted tests; kernel times with CONVT_BWD_BIAS_FUSED=0 and default; bf16 / fp16 channels_last training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 120 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused_ws" -x > $R/tests_ws_bias.log 2>&1
echo "tests ws bias $(( $(date +%s)-S )) s: $(tail -1 $R/tests_ws_bias.log)"; grep -m1 -B5 -A40 "^____" $R/tests_ws_bias.log | grep -E "^E |assert" | head -20; S=$(date +%s)
for j in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 150 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias or warp_specialized or wgmma_channels_last or nchw_via_channels_last or sanitizer_smoke" --shard $j/4 > $R/tests_$j.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for j in 0 1 2 3; do echo "shard $j: $(tail -1 $R/tests_$j.log)"; grep FAILED $R/tests_$j.log | head -5; done; S=$(date +%s)
SPECS=""; for r in kb2_2_s2_op1 kb2_5_k4_s2 kb2_10_k3_p1 kb2_93_k4_s2 unet_up4 unet_up1 maskrcnn_mask; do SPECS="$SPECS $r:bfloat16:channels_last:fwdbwd"; done; SPECS="$SPECS kb2_5_k4_s2:float16:channels_last:fwdbwd kb2_2_s2_op1:float16:channels_last:fwdbwd"
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_on.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_on; do echo "== $f"; grep -h "^## \|grad_weight_ws\|grad_bias_partial" $R/$f.txt | cut -c1-120; done; S=$(date +%s)
timeout -s INT 150 python -m convt_op bench --configs bfloat16:channels_last:fwdbwd,float16:channels_last:fwdbwd --device-time --out $OUT/cl_training > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A4 "geomean speedup" $OUT/cl_training/results.md | tail -3
cd $OUT && tar czf logs.tgz r && rm -rf r
