# Run UC: RingWalk (the ring kernels' walk shared): every grad_weight test; ring kernel times (TF32 and bf16).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3; do OMP_NUM_THREADS=2 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "grad_weight or sanitizer_smoke" --shard $k/4 > $R/tests_gw_$k.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for f in $R/tests_gw_*.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f; done; S=$(date +%s)
ROWS="kb1_69_k3x5:float32:nchw:fwdbwd kb1_57_square:float32:nchw:fwdbwd kb2_10_k3_p1:float32:nchw:fwdbwd kb1_57_square:bfloat16:nchw:fwdbwd kb1_69_k3x5:bfloat16:nchw:fwdbwd kb2_10_k3_p1:bfloat16:nchw:fwdbwd"
KT_OURS_ONLY=1 timeout 80 python scripts/kernel_times.py $ROWS > $R/kt_ring.txt 2>&1
grep -h "^## \|grad_weight_wgmma" $R/kt_ring.txt | cut -c1-110
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
