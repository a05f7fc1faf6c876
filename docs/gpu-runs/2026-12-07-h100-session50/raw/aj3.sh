# Call AJ3: the final tree (TF32 by truncation the default in the channels_last rows grad_weight, the rounded form
# under CONVT_BWD_GW_ROWS_CL_TF32=round): the rows_cl tests (with the fresh-process rounded run), tests/test_cuda.py
# whole in 12 shards, and beside it shards 3 and 4 of 8 of every other test file (AJ1 ran out of time in those two).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 100 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "rows_channels_last" > $R/rows_cl.log 2>&1; echo "rows_cl tests: $(tail -1 $R/rows_cl.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED" $R/rows_cl.log | head
left=$(( 470 - ($(date +%s)-S) ))
for k in 3 4; do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout $left python -m pytest tests --ignore=tests/test_cuda.py -q -p no:cacheprovider --shard $k/8 > $R/other_$k.log 2>&1 & done
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout $left python -m pytest tests/test_cuda.py -q -p no:cacheprovider --shard $k/12 > $R/tc_$k.log 2>&1 & done; wait
for k in $(seq 0 11); do echo "shard $k: $(tail -1 $R/tc_$k.log)"; done; grep -h "^FAILED" $R/tc_*.log | head -20
for k in 3 4; do echo "other shard $k: $(tail -1 $R/other_$k.log)"; done; grep -h "^FAILED\|^ERROR" $R/other_*.log | head -20
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
