# Call AA3: build the checkout (wip/nchw-in-template + test patterns + the float32 rule), tests/test_cuda.py whole (12 shards).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$PWD python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in $(seq 0 11); do PYTHONPATH=$PWD OMP_NUM_THREADS=1 timeout -s INT 280 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in $(seq 0 11); do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep -E "FAILED|Interrupt" $f | head -3; done
cd $OUT && tar czf logs.tgz r && rm -rf r
