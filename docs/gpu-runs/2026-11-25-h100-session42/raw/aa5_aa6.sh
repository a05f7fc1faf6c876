# Call AA7: build HEAD (two raw boxes from 9 taps a chunk) and scratch/wip (a raw box per stage) side by side, then kernel times interleaved.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=8; R=$OUT/r; mkdir -p $R; M=$PWD; W=$PWD/scratch/wip
S=$(date +%s)
(PYTHONPATH=$M python -m convt_op build > $R/build_main.log 2>&1; echo "main rc=$? $(( $(date +%s)-S )) s") &
(cd $W && PYTHONPATH=$W python -m convt_op build > $R/build_wip.log 2>&1; echo "wip rc=$? $(( $(date +%s)-S )) s") &
wait
ROWS="kb1_69_k3x5:float32:nchw:fwd kb1_65_k3x7:float32:nchw:fwd kb2_10_k3_p1:float32:nchw:fwd kb2_2_s2_op1:float32:nchw:fwd kb2_5_k4_s2:float32:nchw:fwd kb1_69_k3x5:bfloat16:nchw:fwd kb1_65_k3x7:float16:nchw:fwd kb2_2_s2_op1:bfloat16:nchw:fwd dcgan_g4:float32:nchw:fwd"
for pass in 1 2; do for tree in wip main; do D=$M; [ $tree = wip ] && D=$W
  (cd $D && PYTHONPATH=$D KT_OURS_ONLY=1 timeout 120 python $M/scripts/kernel_times.py $ROWS > $R/kt_${tree}_$pass.txt 2>&1)
  echo "== $tree pass $pass"; grep -E "##" $R/kt_${tree}_$pass.txt | sed 's/ ours: wall/:/' | cut -c1-90
done; done
cd $OUT && tar czf logs.tgz r && rm -rf r
