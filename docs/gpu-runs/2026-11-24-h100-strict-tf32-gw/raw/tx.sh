# Run TX: store_partial merged (every wgmma grad_weight kernel's store), shared grad_output staging: the grad_weight tests, kb1_65 kernel time.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
KT_OURS_ONLY=1 timeout 30 python scripts/kernel_times.py kb1_65_k3x7:float32:nchw:fwdbwd > $R/kt.txt 2>&1; grep -h "^## \|grad_weight" $R/kt.txt | cut -c1-110; S=$(date +%s)
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "grad_weight or sanitizer_smoke" --shard $k/4 > $R/tests_gw_$k.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/tests_gw_$k.log; grep FAILED $R/tests_gw_$k.log | head -5; done
cd $OUT && tar czf logs.tgz r && rm -rf r
