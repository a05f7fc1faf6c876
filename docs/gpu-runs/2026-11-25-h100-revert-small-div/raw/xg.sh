# Run XG: main 9f73138 (the revert): each backward kernel alone (float32 / bf16 NCHW grad_input, grad_weight), then ncu of the ws forward (kb1_71 float32 CL, kb2_2 bf16 CL) to set beside 67fea80's (run XH).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 200 python -m convt_op bench --configs float32:nchw:grad_input,float32:nchw:grad_weight,bfloat16:nchw:grad_input,bfloat16:nchw:grad_weight --device-time --out $OUT/backward_kernels > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A6 "geomean speedup" $OUT/backward_kernels/results.md | tail -5
S=$(date +%s); source scratch/lead/ncu_block.sh reverted; echo "ncu $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
