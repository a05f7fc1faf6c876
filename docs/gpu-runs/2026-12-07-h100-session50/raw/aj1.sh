# For the fiftieth session's first device call (copy to scratch/lead/ with the helper scripts named in
# ../run_logs.md): the tree of this session's last commit has not run whole on a GPU. tests/test_cuda.py whole in
# 12 shards (the three new test_grad_weight_rows_channels_last cases among them), then every other test file.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 120 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "rows_channels_last" > $R/rows_cl.log 2>&1; echo "rows_cl tests: $(tail -1 $R/rows_cl.log)"; grep -h "^FAILED" $R/rows_cl.log | head
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 200 python -m pytest tests/test_cuda.py -q -p no:cacheprovider --shard $k/12 > $R/tc_$k.log 2>&1 & done; wait
for k in $(seq 0 11); do echo "shard $k: $(tail -1 $R/tc_$k.log)"; done; grep -h "^FAILED" $R/tc_*.log | head -20
left=$(( 560 - ($(date +%s)-S) )); echo "other files get $left s"
for k in $(seq 0 7); do PYTHONPATH=$M OMP_NUM_THREADS=2 timeout $left python -m pytest tests --ignore=tests/test_cuda.py -q -p no:cacheprovider --shard $k/8 > $R/other_$k.log 2>&1 & done; wait
for k in $(seq 0 7); do echo "other shard $k: $(tail -1 $R/other_$k.log)"; done; grep -h "^FAILED\|^ERROR" $R/other_*.log | head -20
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
