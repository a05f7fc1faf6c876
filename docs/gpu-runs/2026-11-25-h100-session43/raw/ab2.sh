# Next session, call 2 (warm): the DCGAN 16-bit channels_last training rows: main (columns backward), main with
# CONVT_BWD_COLS=off (grad_input through the ws forward, grad_weight on its old path), the branch with
# CONVT_BWD_COLS=off (grad_weight on the ws kernel too); kernel breakdown, two passes.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild; R=$OUT/r; mkdir -p $R; M=$PWD; W=$PWD/scratch/wip
ROWS="dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g4:float16:channels_last:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd"
for pass in 1 2; do
  for v in main:main: main_cols_off:main:CONVT_BWD_COLS=off wip_cols_off:wip:CONVT_BWD_COLS=off; do
    name=${v%%:*}; rest=${v#*:}; tree=${rest%%:*}; knob=${rest#*:}; D=$M; [ $tree = wip ] && D=$W
    (cd $D && env $knob PYTHONPATH=$D KT_OURS_ONLY=1 timeout 90 python $M/scripts/kernel_times.py $ROWS > $R/kt_${name}_$pass.txt 2>&1)
    echo "== $name pass $pass"; grep -v -i warn $R/kt_${name}_$pass.txt | cut -c1-120
  done
done
cd $OUT && tar czf logs.tgz r
# Host time per step (both sides in one process): main's columns (two cuBLAS calls, ~25-60 us of host each) against
# the branch's ws kernels under CONVT_BWD_COLS=off.
cd $M
(PYTHONPATH=$M:$M/scratch/lead ROUNDS=5 N=30 timeout 120 python scratch/lead/host_ab.py dcgan_g4:bfloat16:channels_last dcgan_g2:bfloat16:channels_last > $R/host_main.txt 2>&1); grep "##" $R/host_main.txt
(cd $W && CONVT_BWD_COLS=off PYTHONPATH=$W:$M/scratch/lead ROUNDS=5 N=30 timeout 120 python $M/scratch/lead/host_ab.py dcgan_g4:bfloat16:channels_last dcgan_g2:bfloat16:channels_last > $R/host_wip_cols_off.txt 2>&1); grep "##" $R/host_wip_cols_off.txt
cd $OUT && tar czf logs.tgz r
