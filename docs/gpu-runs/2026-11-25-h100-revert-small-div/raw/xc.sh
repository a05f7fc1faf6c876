# Run XC: bisect XA's channels_last forward regression (VN -> XA: kb1_71 fp32 CL 0.666 -> 1.222 ms, kb2_2 bf16 CL 0.687 -> 0.852).
# Kernel times of four rows on HEAD (rule / CONVT_FWD_WS_ROW=32), then with forward_wgmma_ws.cu of 67fea80 (tall tiles, before 64-byte rows), then of d7a1115 (before tall tiles).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
ROWS="kb1_71_rect_k3:float32:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwd kb1_65_k3x7:bfloat16:channels_last:fwd kb1_57_square:float32:channels_last:fwd"
F=csrc/cuda/forward_wgmma_ws.cu; cp $F $R/ws_head.cu
kt() { KT_OURS_ONLY=1 timeout 120 python scripts/kernel_times.py $ROWS > $R/kt_$1.txt 2>&1; echo "== $1"; grep -E "##|   " $R/kt_$1.txt | cut -c1-110 | head -24; }
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }; echo "build $(( $(date +%s)-S )) s"
kt head; CONVT_FWD_WS_ROW=32 kt head_row32
git show 67fea80:$F > $F; S=$(date +%s); python -m convt_op build > $R/build2.log 2>&1 || { tail -30 $R/build2.log; exit 1; }; echo "build 67fea80 $(( $(date +%s)-S )) s"
kt tall
git show d7a1115:$F > $F; S=$(date +%s); python -m convt_op build > $R/build3.log 2>&1 || { tail -30 $R/build3.log; exit 1; }; echo "build d7a1115 $(( $(date +%s)-S )) s"
kt old
cp $R/ws_head.cu $F
cd $OUT && tar czf logs.tgz r && rm -rf r
