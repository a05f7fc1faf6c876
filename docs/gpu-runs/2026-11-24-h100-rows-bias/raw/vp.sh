# Run VP: s2d_suitable asks for grad_input for TF32 images over 64 x 64 (uncommitted), and the test helper tf32_nchw_bias_masks: the fused-bias and kernel == stride tests; float32 NCHW grad_weight alone and training benchmarks.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused or kernel_equals_stride" > $R/tests.log 2>&1
echo "tests $(( $(date +%s)-S )) s: $(tail -1 $R/tests.log)"; grep FAILED $R/tests.log | head; grep -m3 -A40 "^____" $R/tests.log | grep -E "^E " | cut -c1-300 | head -8; S=$(date +%s)
timeout -s INT 200 python -m convt_op bench --configs float32:nchw:grad_weight,float32:nchw:fwdbwd --device-time --out $OUT/fp32 > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A4 "geomean speedup" $OUT/fp32/results.md | tail -3
cd $OUT && tar czf logs.tgz r && rm -rf r
