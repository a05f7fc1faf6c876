# Prepared (fiftieth session), not run: ncu of the suite rows furthest from their floor that no session has profiled,
# to find what bounds each before designing for it (copy ncu_case.py to scratch/lead/ with this script). Per kernel:
# duration, DRAM / L2 / L1 throughput, tensor pipe, issue slots, the top stall reasons.
#  - float32 NCHW forward: maskrcnn_mask 3.2x its floor, unet_up1 2.7x (the kernel == stride kernels), kb1_75 3.3x,
#    kb1_81 3.0x (AE1);
#  - bf16 grad_weight alone: kb1_78 NCHW 7.5x, channels_last 4.0x; kb1_71 NCHW 5.4x (AE6);
#  - first, float32 channels_last kb1_57 grad_weight (2.24x, AJ2): is L2 -> SM the bound (perf notes v50, Next 1)?
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
MET="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
for c in kb1_57_square:float32:channels_last:grad_weight maskrcnn_mask:float32:nchw:fwd unet_up1:float32:nchw:fwd kb1_75_grp_dil_str:float32:nchw:fwd kb1_81_s5_d2:float32:nchw:fwd kb1_78_pad_k3x7:bfloat16:nchw:grad_weight kb1_78_pad_k3x7:bfloat16:channels_last:grad_weight kb1_71_rect_k3:bfloat16:nchw:grad_weight; do
  left=$(( 560 - ($(date +%s)-S) )); [ $left -lt 30 ] && { echo "stopped before $c"; break; }
  n=$(echo $c | cut -d: -f1,3,4 | tr : _)
  PYTHONPATH=$M timeout $left ncu --clock-control none --profile-from-start off --metrics "$MET" python scratch/lead/ncu_case.py $c > $R/ncu_$n.txt 2>&1; echo "$c rc=$? $(( $(date +%s)-S )) s"
  grep -E "^\s+[a-zA-Z_].*\(|gpu__time_duration|throughput|pipe_tensor|inst_issued|warps_active|bytes_(read|write)" $R/ncu_$n.txt | awk '{$1=$1}1' | cut -c1-110 | head -30
done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
