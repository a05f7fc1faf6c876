# Run UF: the review commit 5f085e8 (host-only changes) on a GPU: grad_weight / bias / depthwise tests, then kernel times of the rows whose grad_bias is a pass of its own (float32 training).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for j in 0 1 2 3; do OMP_NUM_THREADS=3 timeout -s INT 280 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "grad_weight or bias or depthwise or sanitizer_smoke" --shard $j/4 > $R/tests_gw_$j.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for f in $R/tests_gw_*.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
KT_OURS_ONLY=1 timeout 120 python scripts/kernel_times.py kb2_2:float32:nchw:fwdbwd kb2_5:float32:nchw:fwdbwd kb2_93:float32:nchw:fwdbwd kb2_10:float32:nchw:fwdbwd unet_up1:float32:nchw:fwdbwd maskrcnn:float32:nchw:fwdbwd unet_up4:float32:nchw:fwdbwd > $R/kt.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; cut -c1-150 $R/kt.txt | grep -v "^$" | head -120
cd $OUT && tar czf logs.tgz r && rm -rf r
