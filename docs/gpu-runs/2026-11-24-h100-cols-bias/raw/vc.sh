# Run VC: the summing columns copy with the taps folded per block (partials [block][Cout]) and the direct GEMM's bias by repeat_bias_kernel. Build; compute-sanitizer memcheck / racecheck on both (san_cols.py); the bias / columns / channels_last tests (4 shards); kernel times knob 0 against default; bf16 / fp16 channels_last training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for tool in memcheck racecheck; do PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 compute-sanitizer --tool $tool --error-exitcode 3 --print-limit 20 python scratch/lead/san_cols.py > $R/san_$tool.log 2>&1; echo "san $tool rc=$? $(tail -1 $R/san_$tool.log)"; grep -m3 "ERROR SUMMARY\|Error\|hazard" $R/san_$tool.log; done
echo "san $(( $(date +%s)-S )) s"; S=$(date +%s)
for j in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 120 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias or columns or channels_last_weight or kernel_equals_stride or channels_last_gemm or sanitizer_smoke" --shard $j/4 > $R/tests_$j.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for j in 0 1 2 3; do echo "shard $j: $(tail -1 $R/tests_$j.log)"; grep FAILED $R/tests_$j.log | head -5; done; S=$(date +%s)
SPECS=""; for c in bfloat16:channels_last:fwdbwd float32:channels_last:fwdbwd; do for r in unet_up1 maskrcnn_mask unet_up4; do SPECS="$SPECS $r:$c"; done; done
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_on.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_on; do echo "== $f"; grep -h "^## \|im2col\|grad_bias\|repeat_bias\|Cat" $R/$f.txt | cut -c1-110; done; cp $R/kt_*.txt $OUT/; S=$(date +%s)
timeout -s INT 80 python -m convt_op bench --configs bfloat16:channels_last:fwdbwd,float16:channels_last:fwdbwd --device-time --out $OUT/cl_training > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A4 "geomean speedup" $OUT/cl_training/results.md | tail -3
cd $OUT && tar czf logs.tgz r && rm -rf r
