# Run TW: final code (TF32 grad_weight by the tap-group rule): kernel times A/B, float32 NCHW training benchmark, whole tests/test_cuda.py (6 shards).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="kb1_65_k3x7:float32:nchw:fwdbwd kb1_69_k3x5:float32:nchw:fwdbwd"
KT_OURS_ONLY=1 timeout 40 python scripts/kernel_times.py $ROWS > $R/kt_new.txt 2>&1
CONVT_BWD_GW_TF32=0 KT_OURS_ONLY=1 timeout 40 python scripts/kernel_times.py $ROWS > $R/kt_old.txt 2>&1
grep -h "^## \|grad_weight" $R/kt_old.txt $R/kt_new.txt | cut -c1-110
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 60 python -m convt_op bench --configs float32:nchw:fwdbwd --device-time --out $OUT/train > $R/bench_train.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/train/results.md | tail -1; S=$(date +%s)
(cd $OUT && tar czf logs.tgz r)
for k in 0 1 2 3 4 5; do OMP_NUM_THREADS=2 timeout -s INT 280 python -m pytest -q -rf --durations=5 tests/test_cuda.py -p no:cacheprovider --shard $k/6 > $R/test_cuda_$k.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5; do tail -1 $R/test_cuda_$k.log; grep FAILED $R/test_cuda_$k.log; done
cd $OUT && tar czf logs.tgz r && rm -rf r
