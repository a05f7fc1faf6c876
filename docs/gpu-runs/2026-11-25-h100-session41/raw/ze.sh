# Run ZE: NCHW input read in place by the ws forward (uncommitted): build, the new test (+ the ws knob tests),
# kernel times default against CONVT_FWD_WS_NCHW_IN=0 (the copy), two interleaved passes.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 200 python -m pytest -q -rf -s -x tests/test_cuda.py -p no:cacheprovider -k "reads_nchw_input_in_place or half_staging or wide_tiles_for_streamed" > $R/test_new.log 2>&1
echo "tests rc=$? $(( $(date +%s)-S )) s"; tail -15 $R/test_new.log | cut -c1-300
grep -q " passed" $R/test_new.log && ! grep -q failed $R/test_new.log || { cd $OUT && tar czf logs.tgz r; exit 1; }
S=$(date +%s)
ROWS="kb1_71_rect_k3:float32:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwd kb1_65_k3x7:bfloat16:channels_last:fwd kb1_71_rect_k3:float32:nchw:fwd kb1_69_k3x5:float32:nchw:fwd kb1_78_pad_k3x7:float32:nchw:fwd kb2_2_s2_op1:float32:nchw:fwd kb2_5_k4_s2:float32:nchw:fwd dcgan_g4:float32:nchw:fwd kb1_69_k3x5:bfloat16:nchw:fwd kb2_2_s2_op1:bfloat16:nchw:fwd kb1_57_square:bfloat16:nchw:fwd"
for pass in 1 2; do
  KT_OURS_ONLY=1 timeout 120 python scripts/kernel_times.py $ROWS > $R/kt_inplace_$pass.txt 2>&1; echo "--- in place $pass"; grep -E "##|wgmma_ws|nchw_to" $R/kt_inplace_$pass.txt | cut -c1-105
  CONVT_FWD_WS_NCHW_IN=0 KT_OURS_ONLY=1 timeout 120 python scripts/kernel_times.py $ROWS > $R/kt_copy_$pass.txt 2>&1; echo "--- copy $pass"; grep -E "##" $R/kt_copy_$pass.txt | cut -c1-105
done
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r
