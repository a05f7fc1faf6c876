# Run RC: build (kNchw items tile-major); Mask R-CNN forward A/B; tests/test_cuda.py whole (5 shards).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
KF="maskrcnn_mask:float32:nchw:fwd maskrcnn_mask:bfloat16:nchw:fwd maskrcnn_mask:float16:nchw:fwd"
timeout 60 python scripts/kernel_times.py $KF > $R/kf_default.txt 2>&1
CONVT_FWD_KSTRIDE=cl timeout 60 python scripts/kernel_times.py $KF > $R/kf_cl.txt 2>&1
for f in kf_default kf_cl; do echo "== $f"; grep -E "^## .*ours" -A2 $R/$f.txt | cut -c1-110; done
echo "kf $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
cd $OUT && tar czf logs.tgz r && rm -rf r
