# Run WD: WA's tree, warm: ncu of the tall-tile warp-specialized forward on dcgan_g2 (channels_last, bf16 and float32), what bounds it.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
M=gpu__time_duration.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,sm__cycles_active.avg,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
for dt in bfloat16 float32; do
CONVT_FWD_PATH=wgmma timeout 90 ncu --clock-control none --kernel-name regex:wgmma_ws_fwd_kernel --launch-skip 3 --launch-count 1 --metrics $M python scratch/lead/ncu_tall.py $dt > $R/ncu_tall_$dt.txt 2>&1; echo "ncu $dt rc=$? $(( $(date +%s)-S )) s"
grep -E "wgmma_ws_fwd_kernel|gpu__time|lts__|dram__|gmma|sm__|grid_size|stalled" $R/ncu_tall_$dt.txt | sed 's/  */ /g' | cut -c1-150
done
cd $OUT && tar czf logs.tgz r && rm -rf r
