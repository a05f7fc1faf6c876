# Run UJ: depthwise grad_bias in the channels_last (channels) kernel too. Build, depthwise tests, kernel times, bf16 channels_last training bench.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for j in 0 1 2 3; do OMP_NUM_THREADS=3 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "depthwise or sanitizer_smoke" --shard $j/4 > $R/tests_dw_$j.log 2>&1 & done; wait
echo "tests dw $(( $(date +%s)-S )) s"; for f in $R/tests_dw_*.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done
grep -h -m1 -A40 "^____" $R/tests_dw_*.log | grep "^E " | head -10; S=$(date +%s)
KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py depthwise_s2:bfloat16:channels_last:fwdbwd depthwise_s2:float32:channels_last:fwdbwd depthwise_s2:bfloat16:nchw:fwdbwd > $R/kt_dw.txt 2>&1
grep -h "^## \|depthwise\|grad_bias" $R/kt_dw.txt | cut -c1-120
timeout -s INT 100 python -m convt_op bench --configs bfloat16:channels_last:fwdbwd --device-time --out $OUT/cl_train > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/cl_train/results.md | tail -1
cd $OUT && tar czf logs.tgz r && rm -rf r
