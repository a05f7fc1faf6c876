# Call AD2 (fresh machine): build HEAD (c7a7f41: 15 instructions per HGMMA); ncu of the ws forward on kb1_69 bf16 CL
# (against AC3's: 836 us, stall samples in the tap loop), tensor-pipe activity and the consumers' stall reasons.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
S0=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S0 )) s"
MET=gpu__time_duration.sum,sm__cycles_active.avg,smsp__cycles_active.avg,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
timeout 100 ncu --clock-control none --kernel-name regex:wgmma_ws_fwd_kernel --launch-skip 3 --launch-count 1 --metrics $MET --section WarpStateStats --section SourceCounters --export $R/kb169 env PYTHONPATH=$M:$M/scratch/lead python scratch/lead/ncu_ws.py kb1_69_k3x5 bfloat16 channels_last > $R/ncu.log 2>&1; echo "ncu rc=$? $(( $(date +%s)-S0 )) s"
ncu --import $R/kb169.ncu-rep --page details > $R/details.txt 2>&1; grep -E "gpu__time|sm__|smsp__|lts__|dram__|Warp Cycles" $R/details.txt | sed 's/  */ /g'
ncu --import $R/kb169.ncu-rep --page source --csv --print-source sass > $R/src.csv 2>&1
timeout 100 ncu --clock-control none --kernel-name regex:wgmma_ws_fwd_kernel --launch-skip 3 --launch-count 1 --metrics $MET env PYTHONPATH=$M:$M/scratch/lead python scratch/lead/ncu_ws.py kb1_69_k3x5 float32 channels_last > $R/ncu_f32.txt 2>&1; grep -E "gpu__time|sm__pipe|smsp__inst" $R/ncu_f32.txt | sed 's/  */ /g'
echo "total $(( $(date +%s)-S0 )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
