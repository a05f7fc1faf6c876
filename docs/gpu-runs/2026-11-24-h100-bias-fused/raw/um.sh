# Run UM: the host-bound rows' timing loop and host trace with the legacy cuBLAS call (CONVT_GEMM_LT=0) against cublasLt (default), float32 NCHW training.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"
for lt in 1 0 1 0; do
  CONVT_GEMM_LT=$lt CONVT_HOST_TRACE=1 timeout 60 python scripts/bench_loop_probe.py dcgan_g2:float32:nchw dcgan_g4:float32:nchw > $R/loop_lt$lt.txt 2> $R/trace_lt$lt.txt
  echo "== CONVT_GEMM_LT=$lt"; grep ours $R/loop_lt$lt.txt; grep -E "cuda.cublas_gemm |cuda.cublas_gemm.matmul|autograd.forward|autograd.backward" $R/trace_lt$lt.txt
done
cd $OUT && tar czf logs.tgz r && rm -rf r
