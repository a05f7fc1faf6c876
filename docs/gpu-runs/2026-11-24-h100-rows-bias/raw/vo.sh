# Run VO: main + the test helper tf32_nchw_bias_masks (uncommitted): the rows / ring fused-bias tests and the knob test; then each backward kernel alone against its floor (float32 / bf16 NCHW grad_input and grad_weight), issue 6's third target.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 150 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused_rows or bias_fused_tf32_ring or bias_fused_ws_knob" > $R/tests.log 2>&1
echo "tests $(( $(date +%s)-S )) s: $(tail -1 $R/tests.log)"; grep FAILED $R/tests.log | head; S=$(date +%s)
timeout -s INT 280 python -m convt_op bench --configs float32:nchw:grad_input,float32:nchw:grad_weight,bfloat16:nchw:grad_input,bfloat16:nchw:grad_weight --device-time --out $OUT/backward_kernels > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A6 "geomean speedup" $OUT/backward_kernels/results.md | tail -5
cd $OUT && tar czf logs.tgz r && rm -rf r
