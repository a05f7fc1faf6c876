# Run UI: the final code (847ac16): every test file but tests/test_cuda.py (6 shards), then float32 NCHW training with --repeat 3 and device time.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
FILES=$(ls tests/test_*.py | grep -v "tests/test_cuda.py")
for j in 0 1 2 3 4 5; do OMP_NUM_THREADS=2 timeout -s INT 290 python -m pytest -q -rf $FILES -p no:cacheprovider --shard $j/6 > $R/other_${j}_of_6.log 2>&1 & done; wait
echo "other files $(( $(date +%s)-S )) s"; for f in $R/other_*_of_6.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
timeout -s INT 130 python -m convt_op bench --configs float32:nchw:fwdbwd --repeat 3 --device-time --out $OUT/train_repeat > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/train_repeat/results.md | tail -1
cd $OUT && tar czf logs.tgz r && rm -rf r
