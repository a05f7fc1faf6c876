# Run QO: build 5f36f1f+, tests/test_cuda.py whole (5 shards), kernel_times of dcgan NCHW training default vs CONVT_S2D_PLANE=padded, memcheck on the plane-kernel padded smoke.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 230 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-200 | head -20
S=$(date +%s)
KT="dcgan_g4:bfloat16:nchw:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd dcgan_g2:float32:nchw:fwdbwd"
timeout 80 python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1
CONVT_S2D_PLANE=padded timeout 80 python scripts/kernel_times.py $KT > $R/kt_padded.txt 2>&1
CONVT_S2D_PLANE=all timeout 80 python scripts/kernel_times.py $KT > $R/kt_all.txt 2>&1
CONVT_S2D_PLANE=padded timeout 80 python scripts/kernel_times.py $KT > $R/kt_padded2.txt 2>&1
for f in kt_default kt_padded kt_all kt_padded2; do echo "== $f"; grep -E "^## .*ours|space_to_depth" $R/$f.txt | cut -c1-110; done
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
