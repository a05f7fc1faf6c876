# Run YC: 16-bit channels_last half staging (uncommitted, CONVT_FWD_WS_HALF_STAGE): kernel times default (rule) vs =0
# (the whole tile, as before) vs =all, in one build; the new test and the tile-kinds test.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="grep -E ##|wgmma_ws|grad_weight|nhwc|gemm"
ROWS="kb1_69_k3x5:bfloat16:channels_last:fwd kb1_65_k3x7:bfloat16:channels_last:fwd kb1_69_k3x5:float16:channels_last:fwd kb1_69_k3x5:bfloat16:channels_last:fwdbwd kb1_65_k3x7:bfloat16:channels_last:fwdbwd"
timeout 150 python scripts/kernel_times.py $ROWS > $R/kt_rule.txt 2>&1; echo "--- rule"; grep -E "##|   " $R/kt_rule.txt | grep -v pack_weights | cut -c1-120 | head -40
CONVT_FWD_WS_HALF_STAGE=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $ROWS > $R/kt_whole.txt 2>&1; echo "--- whole (=0)"; grep -E "##|   " $R/kt_whole.txt | grep -v pack_weights | cut -c1-120 | head -30
ROWS2="kb2_2_s2_op1:bfloat16:channels_last:fwd kb1_57_square:bfloat16:channels_last:fwd kb2_10_k3_p1:bfloat16:channels_last:fwd kb1_78_pad_k3x7:bfloat16:channels_last:fwd"
CONVT_FWD_WS_HALF_STAGE=all KT_OURS_ONLY=1 timeout 80 python scripts/kernel_times.py $ROWS2 > $R/kt_all.txt 2>&1; echo "--- all"; grep -E "##|   " $R/kt_all.txt | grep -v pack_weights | cut -c1-120
KT_OURS_ONLY=1 timeout 80 python scripts/kernel_times.py $ROWS2 > $R/kt_rule2.txt 2>&1; echo "--- rule (same rows)"; grep -E "##|   " $R/kt_rule2.txt | grep -v pack_weights | cut -c1-120
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "half_staging or tile_kinds" > $R/test_ws.log 2>&1; tail -3 $R/test_ws.log; grep FAILED $R/test_ws.log | head
echo "tests $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
