# Run UA: the ring kernel's final code (grad_output rows staged by warpgroup 1, no knob): every grad_weight test, the part of tests/test_cuda.py that TZ's shard 3 did not reach (shard 3/6 again, as 3/12 + 9/12), ring kernel times, float32 NCHW training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3; do OMP_NUM_THREADS=2 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "grad_weight or sanitizer_smoke" --shard $k/4 > $R/tests_gw_$k.log 2>&1 & done
for k in 3 9; do OMP_NUM_THREADS=2 timeout -s INT 250 python -m pytest -q -rf --durations=5 tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for f in $R/tests_gw_*.log $R/test_cuda_*_of_12.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f; done; S=$(date +%s)
ROWS="kb1_69_k3x5:float32:nchw:fwdbwd kb1_57_square:float32:nchw:fwdbwd kb2_10_k3_p1:float32:nchw:fwdbwd"
KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_ring.txt 2>&1
grep -h "^## \|grad_weight_wgmma" $R/kt_ring.txt | cut -c1-110
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
(cd $OUT && tar czf logs.tgz r)
timeout -s INT 70 python -m convt_op bench --configs float32:nchw:fwdbwd --device-time --out $OUT/train > $R/bench_train.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/train/results.md | tail -1
cd $OUT && tar czf logs.tgz r && rm -rf r
