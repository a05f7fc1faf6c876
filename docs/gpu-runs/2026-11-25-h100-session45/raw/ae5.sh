# AE5 (fresh machine): the staged depthwise backward kernel (grad_output and x through shared memory by cp.async, three
# rows in flight) against the register walk (CONVT_BWD_DW=walk). Build; memcheck + racecheck on the staged smoke case;
# the depthwise / kernel == stride GPU tests; the depthwise kernels alone and the training rows, staged against walk.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
for tool in memcheck racecheck; do
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONPATH=$M timeout 120 compute-sanitizer --tool $tool --error-exitcode 3 --print-limit 20 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "sanitizer_smoke and depthwise_cl_staged" > $R/san_$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_$tool.log | tail -1) $(tail -1 $R/san_$tool.log)"
done
K="depthwise or grad_input_alone or bias_fused or output_mask or sanitizer_smoke or deterministic or gradcheck or opcheck"
for k in 0 1 2 3 4 5; do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 200 python -m pytest tests/test_cuda.py -q -k "$K" --shard $k/6 -p no:cacheprovider > $R/tests_$k.log 2>&1 & done; wait
for k in 0 1 2 3 4 5; do echo "tests $k: $(tail -1 $R/tests_$k.log)"; done; grep -h "^FAILED\|^ERROR" $R/tests_*.log | head -20; echo "tests $(( $(date +%s)-S )) s"
for v in "X=1" "CONVT_BWD_DW=walk"; do t=$(echo $v | tr ' =' '__')
  env $v PYTHONPATH=$M timeout 120 python -m convt_op bench --configs float16:channels_last:grad_input,bfloat16:channels_last:grad_input,bfloat16:channels_last:grad_weight,float32:channels_last:grad_input,float32:channels_last:grad_weight,bfloat16:channels_last:fwdbwd,float32:channels_last:fwdbwd --shapes depthwise_s2,depthwise_k4s2 --device-time --out $R/dw_$t > $R/dw_$t.log 2>&1
  echo "== $v rc=$?"; grep "^| depth" $R/dw_$t.log | cut -d'|' -f2,3,5,6,7,8,9,10,13
done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
