# Run YA: branch epilogue-offsets (main 13759f2 + 815e00f's forward_wgmma_ws.cu: channels_last epilogues store at a
# 32-bit offset from the tile's first output): kernel times on XI's rows, ncu beside XI's, kb1_69 with PyTorch.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="kb1_71_rect_k3:float32:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwd kb1_65_k3x7:bfloat16:channels_last:fwd kb1_57_square:float32:channels_last:fwd kb2_2_s2_op1:float32:channels_last:fwd dcgan_g4:bfloat16:channels_last:fwd"
KT_OURS_ONLY=1 timeout 120 python scripts/kernel_times.py $ROWS > $R/kt_offsets.txt 2>&1; grep -E "##|   " $R/kt_offsets.txt | grep -v pack_weights | cut -c1-110 | head -24
KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py kb2_2_s2_op1:float32:nchw:fwd kb1_71_rect_k3:float32:nchw:fwd kb2_10_k3_p1:bfloat16:nchw:fwd > $R/kt_offsets_nchw.txt 2>&1; grep -E "##|   " $R/kt_offsets_nchw.txt | cut -c1-110 | head -16
timeout 90 python scripts/kernel_times.py kb1_69_k3x5:bfloat16:channels_last:fwd kb1_69_k3x5:float32:channels_last:fwd > $R/kt_kb1_69.txt 2>&1; grep -E "##|   " $R/kt_kb1_69.txt | cut -c1-110 | head -16
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
source scratch/lead/ncu_block.sh offsets; echo "ncu $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
