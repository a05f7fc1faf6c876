# Run TD: A/B of the working tree (16-bit NCHW runs at SW == 1, route rule) against HEAD 0358269 (base_tree): tests, kernel times.
unset CXX CC; export PYTHONUNBUFFERED=1 MAX_JOBS=8; R=$OUT/r; mkdir -p $R
H=$PWD; B=$PWD/scratch/lead/base_tree
nvidia-smi -L; S=$(date +%s)
(cd $B && CONVT_OP_BUILD_DIR=$B/.devbuild PYTHONPATH=$B python -m convt_op build > $R/build_base.log 2>&1; echo "base build rc=$?") &
(CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD python -m convt_op build > $R/build.log 2>&1; echo "head build rc=$?") &
wait; echo "builds $(( $(date +%s)-S )) s"; S=$(date +%s)
export CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
for k in row_runs nchw_via_channels_last grad_input_nchw_via; do
  OMP_NUM_THREADS=4 timeout -s INT 170 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k $k > $R/tests_$k.log 2>&1 &
done; wait; echo "tests $(( $(date +%s)-S )) s"; for k in row_runs nchw_via_channels_last grad_input_nchw_via; do tail -2 $R/tests_$k.log; done; S=$(date +%s)
F="kb1_71_rect_k3 kb1_78_pad_k3x7 kb1_69_k3x5 kb1_57_square kb1_65_k3x7 kb2_10_k3_p1"
ROWS="$(for s in $F; do echo -n "$s:float32:nchw:fwd $s:bfloat16:nchw:fwd "; done) kb1_71_rect_k3:float32:nchw:fwdbwd kb1_69_k3x5:float32:nchw:fwdbwd kb1_78_pad_k3x7:float32:nchw:fwdbwd kb1_57_square:bfloat16:nchw:fwdbwd kb2_10_k3_p1:bfloat16:nchw:fwdbwd kb1_65_k3x7:bfloat16:nchw:fwdbwd kb1_69_k3x5:bfloat16:nchw:fwdbwd kb1_71_rect_k3:bfloat16:nchw:fwdbwd kb2_5_k4_s2:bfloat16:nchw:fwdbwd kb2_93_k4_s2:bfloat16:nchw:fwdbwd kb1_57_square:float16:nchw:fwdbwd"
export KT_OURS_ONLY=1
timeout 150 python scripts/kernel_times.py $ROWS > $R/kt_head.txt 2>&1
(cd $B && CONVT_OP_BUILD_DIR=$B/.devbuild PYTHONPATH=$B timeout 150 python $H/scripts/kernel_times.py $ROWS > $R/kt_base.txt 2>&1)
echo "kt $(( $(date +%s)-S )) s"
paste <(grep "^## " $R/kt_base.txt | sed 's/## //; s/ ours: wall [0-9]* us\/step, device / /; s/ us\/step//') <(grep "^## " $R/kt_head.txt | sed 's/.*device //; s/ us\/step//') | awk '{printf "%-40s base %7s head %7s  %.3f\n", $1, $2, $3, $3/$2}'
cd $OUT && tar czf logs.tgz r && rm -rf r
