# Call AH3: the final tree (7db1990 and its docs): tests/test_cuda.py whole in 12 shards, then every other test file
# (each in its own process, concurrently) in the time left.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 200 python -m pytest tests/test_cuda.py -q -p no:cacheprovider --shard $k/12 > $R/tc_$k.log 2>&1 & done; wait
for k in $(seq 0 11); do echo "shard $k: $(tail -1 $R/tc_$k.log)"; done; grep -h "^FAILED" $R/tc_*.log | head -20
echo "test_cuda done $(( $(date +%s)-S )) s"; left=$(( 520 - ($(date +%s)-S) ))
for k in $(seq 0 7); do PYTHONPATH=$M OMP_NUM_THREADS=2 timeout $left python -m pytest tests --ignore=tests/test_cuda.py -q -p no:cacheprovider --shard $k/8 > $R/other_$k.log 2>&1 & done; wait
for k in $(seq 0 7); do echo "other shard $k: $(tail -1 $R/other_$k.log)"; done; grep -h "^FAILED\|^ERROR" $R/other_*.log | head -20
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
