# Next session, call 2 (warm): main against the template branch, kernel times interleaved (16-bit CL rows that ZK found
# slower, and NCHW rows), then float32 64-channel stride-1 NCHW through the route (CONVT_FWD_VIA_CL=all) on the branch.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild; R=$OUT/r; mkdir -p $R; M=$PWD; W=$PWD/scratch/wip
ROWS="kb1_69_k3x5:bfloat16:channels_last:fwd kb2_5_k4_s2:bfloat16:channels_last:fwd kb1_57_square:float16:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwd kb1_71_rect_k3:float32:nchw:fwd kb1_69_k3x5:float32:nchw:fwd kb1_57_square:bfloat16:nchw:fwd dcgan_g4:float32:nchw:fwd"
for pass in 1 2; do for tree in main wip; do D=$M; [ $tree = wip ] && D=$W
  (cd $D && PYTHONPATH=$D KT_OURS_ONLY=1 timeout 90 python $M/scripts/kernel_times.py $ROWS > $R/kt_${tree}_$pass.txt 2>&1)
  echo "== $tree pass $pass"; grep -E "##" $R/kt_${tree}_$pass.txt | cut -c1-100
done; done
V="kb1_57_square:float32:nchw:fwd kb1_65_k3x7:float32:nchw:fwd kb2_10_k3_p1:float32:nchw:fwd"
for pass in 1 2; do
  (cd $W && PYTHONPATH=$W KT_OURS_ONLY=1 timeout 90 python $M/scripts/kernel_times.py $V > $R/kt_rule_$pass.txt 2>&1); echo "-- rule $pass"; grep "##" $R/kt_rule_$pass.txt | cut -c1-100
  (cd $W && PYTHONPATH=$W CONVT_FWD_VIA_CL=all KT_OURS_ONLY=1 timeout 90 python $M/scripts/kernel_times.py $V > $R/kt_viacl_$pass.txt 2>&1); echo "-- via_cl all $pass"; grep "##" $R/kt_viacl_$pass.txt | cut -c1-100
done
cd $OUT && tar czf logs.tgz r
