# Run QK: build e2ff579+, memcheck/racecheck on the via-CL smoke cases, the other test files on the GPU, ncu stall reasons of kb1_69's ws kernel, kernel_times of NCHW bf16 training.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OUT=$R/san GPU_CHECK_STEPS=memcheck,racecheck GPU_CHECK_MEMCHECK_K="sanitizer_smoke and via_cl" GPU_CHECK_RACECHECK_K="sanitizer_smoke and via_cl" TIMEOUT_SANITIZER=60 bash scripts/gpu_check.sh > $R/san.txt 2>&1; tail -6 $R/san.txt; echo "san $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 200 python -m pytest -q -rf tests --ignore=tests/test_cuda.py -p no:cacheprovider --shard $k/4 > $R/other_$k.log 2>&1 & done
wait; echo "other tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/other_$k.log; done; grep -h "^FAILED\|^ERROR" $R/other_*.log | cut -c1-200 | head -20
S=$(date +%s)
timeout 60 ncu --clock-control none --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio -k regex:wgmma_ws_fwd_kernel --launch-skip 5 --launch-count 1 python scratch/lead/wide_probe.py kb1_69_k3x5:bfloat16:channels_last > $R/ncu_stalls.txt 2>&1; echo "ncu rc=$? $(( $(date +%s)-S )) s"
grep "stalled" $R/ncu_stalls.txt | sort -k3 -n -r | head -12
timeout 90 python scripts/kernel_times.py dcgan_g4:bfloat16:nchw:fwdbwd maskrcnn_mask:bfloat16:nchw:fwdbwd kb2_93_k4_s2:bfloat16:nchw:fwdbwd > $R/kt.txt 2>&1; grep -v Warn $R/kt.txt | cut -c1-160 | head -40
cd $OUT && tar czf logs.tgz r && rm -rf r
