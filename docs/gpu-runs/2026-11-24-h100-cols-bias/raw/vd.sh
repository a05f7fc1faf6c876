# Run VD: main 0a09812 (the summing columns copy, repeat_bias_kernel): build; tests/test_cuda.py whole (12 shards); our C++ host trace of one small training row at a time; float32 / bf16 NCHW training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 240 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
for spec in dcgan_g2:float32:nchw unet_up4:bfloat16:channels_last; do CONVT_HOST_TRACE=1 HA_WHO=ours timeout 60 python scratch/lead/host_api.py $spec > $R/host_trace_${spec%%:*}.txt 2>&1; done
echo "host traces $(( $(date +%s)-S )) s"; cp $R/host_trace_*.txt $OUT/; S=$(date +%s)
timeout -s INT 150 python -m convt_op bench --configs float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd --device-time --out $OUT/nchw_training > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A4 "geomean speedup" $OUT/nchw_training/results.md | tail -3
cd $OUT && tar czf logs.tgz r && rm -rf r
