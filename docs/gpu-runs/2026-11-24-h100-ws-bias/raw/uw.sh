# Run UW: the final form (m64n8k16 sums issued by both consumers, UR's code) : build, tests/test_cuda.py whole (12 shards at once), bf16 / fp16 channels_last training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 330 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
timeout -s INT 90 python -m convt_op bench --configs bfloat16:channels_last:fwdbwd,float16:channels_last:fwdbwd --device-time --out $OUT/cl_training > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A4 "geomean speedup" $OUT/cl_training/results.md | tail -3
cd $OUT && tar czf logs.tgz r && rm -rf r
