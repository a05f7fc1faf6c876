# Run ZL: NCHW input in place as template kernels (kNchwIn; the other kernels SASS-identical to main's): build,
# the tests of the NCHW routes, kernel times in place against the copy (one pass).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }; echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="reads_nchw_input_in_place or test_forward_nchw_via_channels_last or test_forward_column_phase_blocks or half_staging or wide_tiles_for_streamed"
for k in 0 1 2 3; do OMP_NUM_THREADS=2 timeout -s INT 170 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; grep -E "^FAILED" $R/test_$k.log | head -3; done; S=$(date +%s)
ROWS="kb1_71_rect_k3:float32:nchw:fwd kb1_69_k3x5:float32:nchw:fwd kb2_2_s2_op1:float32:nchw:fwd dcgan_g4:float32:nchw:fwd kb1_57_square:bfloat16:nchw:fwd kb2_2_s2_op1:bfloat16:channels_last:fwd"
KT_OURS_ONLY=1 timeout 80 python scripts/kernel_times.py $ROWS > $R/kt_inplace.txt 2>&1; echo "--- in place"; grep -E "##" $R/kt_inplace.txt | cut -c1-100
CONVT_FWD_WS_NCHW_IN=0 KT_OURS_ONLY=1 timeout 80 python scripts/kernel_times.py $ROWS > $R/kt_copy.txt 2>&1; echo "--- copy"; grep -E "##" $R/kt_copy.txt | cut -c1-100
echo "kt $(( $(date +%s)-S )) s"; cd $OUT && tar czf logs.tgz r && rm -rf r
