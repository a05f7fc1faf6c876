# Run ZB: main against wip/epilogue-bounds, kernel times interleaved (two passes each), ncu instruction counts,
# API calls per step of the small training rows (main).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild; R=$OUT/r; mkdir -p $R
ROWS="kb1_71_rect_k3:float32:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwd kb2_2_s2_op1:float32:channels_last:fwd kb1_65_k3x7:bfloat16:channels_last:fwd kb2_10_k3_p1:bfloat16:nchw:fwd"
M=$PWD; W=$PWD/scratch/wip; S=$(date +%s)
for pass in 1 2; do for tree in main wip; do
  D=$M; [ $tree = wip ] && D=$W
  (cd $D && PYTHONPATH=$D KT_OURS_ONLY=1 timeout 60 python $M/scripts/kernel_times.py $ROWS > $R/kt_${tree}_$pass.txt 2>&1)
  echo "== $tree pass $pass"; grep -E "##|wgmma_ws" $R/kt_${tree}_$pass.txt | cut -c1-100
done; done
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
MET=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_inst_executed_op_global_st.sum
for tree in main wip; do D=$M; [ $tree = wip ] && D=$W
  for row in "kb1_71_rect_k3 float32 channels_last" "kb2_2_s2_op1 bfloat16 channels_last"; do
    f=$R/ncu_${tree}_$(echo $row | cut -d' ' -f1-2 | tr ' ' _).txt
    (cd $D && PYTHONPATH=$D timeout 100 ncu --clock-control none --kernel-name regex:wgmma_ws_fwd_kernel --launch-skip 3 --launch-count 1 --metrics $MET python $M/scratch/lead/ncu_ws.py $row > $f 2>&1)
    echo "== ncu $tree $row"; grep -E "gpu__time|smsp__" $f | sed 's/  */ /g' | cut -c1-100
  done; done
echo "ncu $(( $(date +%s)-S )) s"; S=$(date +%s)
PYTHONPATH=$M timeout 150 python scratch/lead/host_calls.py dcgan_g2:float32:nchw dcgan_g4:bfloat16:channels_last unet_up4:bfloat16:channels_last > $R/host_calls.txt 2>&1; tail -n +1 $R/host_calls.txt | cut -c1-150
echo "host $(( $(date +%s)-S )) s"
