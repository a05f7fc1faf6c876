# Run QJ: build, tests/test_cuda.py whole in 5 shards (the via-CL rule's test fixes), then ncu on kb1_69 bf16 channels_last (ours and cuDNN's), tile-width probe.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s); NS=5
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 230 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/$NS > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-200 | head -30
S=$(date +%s)
SEC="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section SchedulerStats --section LaunchStats --section InstructionStats"
timeout 60 ncu --clock-control none $SEC -k regex:wgmma_ws_fwd_kernel --launch-skip 5 --launch-count 1 python scratch/lead/wide_probe.py kb1_69_k3x5:bfloat16:channels_last > $R/ncu_ours.txt 2>&1; echo "ncu ours rc=$? $(( $(date +%s)-S )) s"
timeout 60 ncu --clock-control none $SEC --launch-skip 4 --launch-count 3 python scratch/lead/pt_probe.py kb1_69_k3x5:bfloat16:channels_last 8 > $R/ncu_cudnn.txt 2>&1; echo "ncu cudnn rc=$? $(( $(date +%s)-S )) s"
for tx in 22 30 46 54; do echo "TX=$tx $(CONVT_FWD_WS_TX=$tx python scratch/lead/wide_probe.py kb1_69_k3x5:bfloat16:channels_last 2>&1 | grep total | cut -c1-120)"; done
grep -E "Duration|Throughput|Registers|Achieved Occupancy|Block Size|Grid Size|Issue Slots|Executed Ipc|No Eligible|Shared Memory" $R/ncu_ours.txt | head -40
cd $OUT && tar czf logs.tgz r && rm -rf r
