# Run UN: the review commits af4bee2 / a090dce on a GPU (bias_fused, kernel == stride, columns, GEMM mode tests), then per-kernel device times of every training row under CONVT_GEMM_LT=1 (cublasLt plans) and CONVT_GEMM_LT=0 (legacy cuBLAS call).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for j in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 170 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused or kernel_equals_stride or columns or sanitizer_smoke or gemm_cublaslt" --shard $j/4 > $R/tests_$j.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for j in 0 1 2 3; do echo "shard $j: $(tail -1 $R/tests_$j.log)"; grep FAILED $R/tests_$j.log | head -3; done; S=$(date +%s)
ROWS="kb1_57_square kb1_65_k3x7 kb1_69_k3x5 kb1_71_rect_k3 kb1_75_grp_dil_str kb1_78_pad_k3x7 kb1_81_s5_d2 kb2_2_s2_op1 kb2_5_k4_s2 kb2_10_k3_p1 kb2_93_k4_s2 unet_up4 unet_up1 dcgan_g2 dcgan_g4 maskrcnn_mask depthwise_s2 depthwise_k4s2"
SPECS=""; for c in float32:nchw:fwdbwd bfloat16:nchw:fwdbwd bfloat16:channels_last:fwdbwd float32:nchw:fwd bfloat16:channels_last:fwd; do for r in $ROWS; do SPECS="$SPECS $r:$c"; done; done
for lt in 1 0; do CONVT_GEMM_LT=$lt KT_OURS_ONLY=1 timeout 150 python scripts/kernel_times.py $SPECS > $R/kt_lt$lt.txt 2>&1; echo "kt lt=$lt rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s); done
cd $OUT && tar czf logs.tgz r && cp r/kt_lt*.txt . && rm -rf r
