# Run QW: the session's final tree: build, tests/test_cuda.py whole (5 shards), memcheck of the via_cl smoke cases (fp32 routed too).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 240 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
OUT=$R/san GPU_CHECK_STEPS=memcheck GPU_CHECK_MEMCHECK_K="sanitizer_smoke and via_cl" TIMEOUT_SANITIZER=60 bash scripts/gpu_check.sh > $R/san.txt 2>&1; grep -i "summary\|memcheck " $R/san.txt | tail -3; echo "san $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
