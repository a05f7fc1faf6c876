# Run SF: build ab3b589 (paired phases + NCHW grad_weight via channels_last); the other test files (6 shards).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5; do OMP_NUM_THREADS=2 timeout -s INT 330 python -m pytest -q -rf tests --ignore=tests/test_cuda.py -p no:cacheprovider --shard $k/6 > $R/other_$k.log 2>&1 & done
wait; echo "other tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5; do tail -1 $R/other_$k.log; done; grep -h "^FAILED\|^ERROR" $R/other_*.log | cut -c1-300 | head -20
cd $OUT && tar czf logs.tgz r && rm -rf r
