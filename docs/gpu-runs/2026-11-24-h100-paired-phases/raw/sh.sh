# Run SH: A/B of the channels_last ws kernel after the paired-phase refactor: HEAD (ab3b589+) against 935dbda (scratch/lead/base_tree), interleaved; host-bound training rows (wall vs device).
unset CXX CC; export PYTHONUNBUFFERED=1 MAX_JOBS=8; R=$OUT/r; mkdir -p $R
H=$PWD; B=$PWD/scratch/lead/base_tree
nvidia-smi -L; S=$(date +%s)
(cd $B && CONVT_OP_BUILD_DIR=$B/.devbuild PYTHONPATH=$B python -m convt_op build > $R/build_base.log 2>&1; echo "base build rc=$?") &
(CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD python -m convt_op build > $R/build.log 2>&1; echo "head build rc=$?") &
wait; echo "builds $(( $(date +%s)-S )) s"; S=$(date +%s)
KT="kb1_69_k3x5:float32:channels_last:fwd kb1_69_k3x5:bfloat16:channels_last:fwd kb1_57_square:float32:channels_last:fwd kb2_93_k4_s2:float32:channels_last:fwd kb2_5_k4_s2:bfloat16:channels_last:fwd dcgan_g2:float32:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd"
for rep in 1 2; do
  CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD KT_OURS_ONLY=1 timeout 80 python scripts/kernel_times.py $KT > $R/kt_head_$rep.txt 2>&1
  (cd $B && CONVT_OP_BUILD_DIR=$B/.devbuild PYTHONPATH=$B KT_OURS_ONLY=1 timeout 80 python $H/scripts/kernel_times.py $KT > $R/kt_base_$rep.txt 2>&1)
done
for f in kt_head_1 kt_base_1 kt_head_2 kt_base_2; do echo "== $f"; grep -E "^## " $R/$f.txt | cut -c1-100; done
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
