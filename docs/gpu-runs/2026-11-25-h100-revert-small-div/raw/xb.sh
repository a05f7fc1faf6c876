# Run XB (warm after XA, same build): each backward kernel alone against its floor (float32 / bf16 NCHW grad_input and grad_weight).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 400 python -m convt_op bench --configs float32:nchw:grad_input,float32:nchw:grad_weight,bfloat16:nchw:grad_input,bfloat16:nchw:grad_weight --device-time --out $OUT/backward_kernels > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A6 "geomean speedup" $OUT/backward_kernels/results.md | tail -5
cd $OUT && tar czf logs.tgz r && rm -rf r
