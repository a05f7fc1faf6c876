# Run QN: A/B of the ws forward's kernel time, b94075b (QF's tree) against HEAD, on the shapes whose benchmark rows moved 5-13% (kb1_65 fp32 CL, kb2_10 bf16 CL).
unset CXX CC; export PYTHONUNBUFFERED=1; R=$OUT; S=$(date +%s)
( CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD python -m convt_op build > $R/build_new.log 2>&1 ) &
( cd scratch/lead/old && CONVT_OP_BUILD_DIR=$PWD/.devbuild_old PYTHONPATH=$PWD python -m convt_op build > $R/build_old.log 2>&1 ) &
wait; echo "builds $(( $(date +%s)-S )) s"; tail -2 $R/build_new.log $R/build_old.log
K="kb1_65_k3x7:float32:channels_last kb2_10_k3_p1:bfloat16:channels_last kb1_65_k3x7:bfloat16:channels_last kb2_5_k4_s2:float32:channels_last kb1_57_square:bfloat16:channels_last"
for round in 1 2; do
  echo "== old $round"; (cd scratch/lead/old && CONVT_OP_BUILD_DIR=$PWD/.devbuild_old PYTHONPATH=$PWD python ../wide_probe.py $K 2>&1 | grep total | cut -c1-150)
  echo "== new $round"; CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD python scratch/lead/wide_probe.py $K 2>&1 | grep total | cut -c1-150
done
