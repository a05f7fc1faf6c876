# Run YG (main d0195a9): host time per call of the small steps under the cuBLAS modes: default (cublasLt, cached
# plans, 32 MiB workspace bound), CONVT_GEMM_LT=0 (cublasGemmStridedBatchedEx), CONVT_GEMM_WORKSPACE_MB=1; device
# times of the same steps (kernel_times.py).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="dcgan_g2:float32:nchw dcgan_g2:bfloat16:channels_last dcgan_g4:bfloat16:channels_last dcgan_g2:bfloat16:nchw"
for mode in default LT0 WS1; do
  case $mode in default) E="A=1";; LT0) E="CONVT_GEMM_LT=0";; WS1) E="CONVT_GEMM_WORKSPACE_MB=1";; esac
  echo "=== $mode"
  env $E timeout 150 python scratch/lead/host_clean.py $ROWS > $R/host_$mode.txt 2>&1; grep -E "calib a.add|##" $R/host_$mode.txt
  env $E KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py dcgan_g2:float32:nchw:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd > $R/kt_$mode.txt 2>&1; grep -E "##" $R/kt_$mode.txt
done
echo "host $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
