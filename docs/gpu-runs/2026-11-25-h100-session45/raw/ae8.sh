# AE8 (fresh machine): the final tree: the staged depthwise backward unbounded (AE5 codegen), 32-column tiles, float32
# grad_weight alone on the register walk. Build; memcheck on the depthwise smoke cases; the depthwise GPU tests; the
# depthwise rows against the walk.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONPATH=$M timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 --print-limit 20 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "sanitizer_smoke and depthwise" > $R/san_memcheck.log 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $R/san_memcheck.log | tail -1) $(tail -1 $R/san_memcheck.log)"
K="depthwise or bias_fused or deterministic or output_mask"
for k in 0 1 2 3; do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 150 python -m pytest tests/test_cuda.py -q -k "$K" --shard $k/4 -p no:cacheprovider > $R/tests_$k.log 2>&1 & done; wait
for k in 0 1 2 3; do echo "tests $k: $(tail -1 $R/tests_$k.log)"; done; grep -h "^FAILED\|^ERROR" $R/tests_*.log | head -20; echo "tests $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 60 python -m convt_op bench --configs bfloat16:channels_last:grad_input,bfloat16:channels_last:grad_weight,float32:channels_last:grad_input,float32:channels_last:grad_weight,bfloat16:channels_last:fwdbwd,float32:channels_last:fwdbwd --shapes depthwise_s2,depthwise_k4s2 --device-time --out $R/dw > $R/dw.log 2>&1
echo "== dw rc=$?"; grep "^| depth" $R/dw.log | cut -d'|' -f2,3,5,6,7,8,9,10,13
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
