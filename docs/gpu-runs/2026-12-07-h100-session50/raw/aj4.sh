# Call AJ4: the final tree (89fde13): the channels_last tests of the other test files that reach the float32
# channels_last rows grad_weight (AJ1 ran them on 15a0069, with rounding), 8 shards.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
F="tests/test_opcheck.py tests/test_autograd.py tests/test_compile_cuda.py tests/test_nn.py"; left=$(( 330 - ($(date +%s)-S) ))
for k in $(seq 0 7); do PYTHONPATH=$M OMP_NUM_THREADS=2 timeout $left python -m pytest $F -k channels_last -q -p no:cacheprovider --shard $k/8 > $R/cl_$k.log 2>&1 & done; wait
for k in $(seq 0 7); do echo "shard $k: $(tail -1 $R/cl_$k.log)"; done; grep -h "^FAILED\|^ERROR" $R/cl_*.log | head -20
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
