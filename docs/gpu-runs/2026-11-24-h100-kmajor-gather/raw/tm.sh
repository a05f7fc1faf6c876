# Run TM: NCHW GEMM + gather forward with a K-major copy of the weight (CONVT_GEMM_KMAJOR_W=1) against the weight as stored: kernel times, then the whole tests/test_cuda.py under the knob.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="unet_up4:float32:nchw:fwd dcgan_g2:float32:nchw:fwd unet_up1:float32:nchw:fwd maskrcnn_mask:float32:nchw:fwd unet_up4:bfloat16:nchw:fwd dcgan_g2:bfloat16:nchw:fwd unet_up4:float32:nchw:fwdbwd dcgan_g2:float32:nchw:fwdbwd"
export KT_OURS_ONLY=1
CONVT_GEMM_KMAJOR_W=0 timeout 50 python scripts/kernel_times.py $ROWS > $R/kt_w0.txt 2>&1
CONVT_GEMM_KMAJOR_W=1 timeout 50 python scripts/kernel_times.py $ROWS > $R/kt_w1.txt 2>&1
CONVT_GEMM_LAYOUT=flat CONVT_GEMM_KMAJOR_W=0 timeout 30 python scripts/kernel_times.py unet_up4:float32:nchw:fwd > $R/kt_flat_w0.txt 2>&1
CONVT_GEMM_LAYOUT=flat CONVT_GEMM_KMAJOR_W=1 timeout 30 python scripts/kernel_times.py unet_up4:float32:nchw:fwd > $R/kt_flat_w1.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
paste <(grep "^## " $R/kt_w0.txt | sed 's/## //; s/ ours: wall [0-9]* us\/step, device / /; s/ us\/step//') <(grep "^## " $R/kt_w1.txt | sed 's/.*device //; s/ us\/step//') | awk '{printf "%-42s w0 %7s w1 %7s  %.3f\n", $1, $2, $3, $3/$2}'
for f in w0 w1 flat_w0 flat_w1; do echo "== $f"; grep -h -A4 "## unet_up4:float32:nchw:fwd \|## dcgan_g2:float32:nchw:fwd " $R/kt_$f.txt | cut -c1-110; done
unset KT_OURS_ONLY
export CONVT_GEMM_KMAJOR_W=1
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 240 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_cuda_$k.log 2>&1 & done; wait
echo "test_cuda (CONVT_GEMM_KMAJOR_W=1) $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_cuda_$k.log; grep FAILED $R/test_cuda_$k.log; done
cd $OUT && tar czf logs.tgz r && rm -rf r
