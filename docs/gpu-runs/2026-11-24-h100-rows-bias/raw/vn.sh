# Run VN: resident_blocks_per_sm keyed by kernel address (forward_wgmma.cu), on the tree of VK-VM: build; tests/test_cuda.py whole (12 shards); channels_last forward benchmark, float32 and bf16 (the general wgmma kernel's persistent grids).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
timeout -s INT 120 python -m convt_op bench --configs float32:channels_last:fwd,bfloat16:channels_last:fwd --device-time --out $OUT/cl_forward > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A4 "geomean speedup" $OUT/cl_forward/results.md | tail -3
cd $OUT && tar czf logs.tgz r && rm -rf r
