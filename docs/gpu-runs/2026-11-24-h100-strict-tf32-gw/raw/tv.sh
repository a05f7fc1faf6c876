# Run TV: TF32 grad_weight kernel at two blocks per SM; float32 NCHW training benchmark: grad_weight tests, kernel times against CONVT_BWD_GW_TF32=0 on the stride-1 training rows.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 150 python -m pytest -q -rf -x tests/test_cuda.py -p no:cacheprovider -k "test_grad_weight_wgmma_tf32 and not off" > $R/tests_tf32.log 2>&1
echo "tests tf32 $(( $(date +%s)-S )) s"; tail -3 $R/tests_tf32.log; grep -m3 -A25 "^____\|Error\|assert" $R/tests_tf32.log | head -60; S=$(date +%s)
ROWS="kb1_69_k3x5:float32:nchw:fwdbwd kb1_57_square:float32:nchw:fwdbwd kb1_65_k3x7:float32:nchw:fwdbwd kb2_10_k3_p1:float32:nchw:fwdbwd kb1_78_pad_k3x7:float32:nchw:fwdbwd"
KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $ROWS > $R/kt_new.txt 2>&1
CONVT_BWD_GW_TF32=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $ROWS > $R/kt_old.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
paste <(grep "^## " $R/kt_old.txt | sed 's/## //; s/ ours: wall [0-9]* us\/step, device / /; s/ us\/step//') <(grep "^## " $R/kt_new.txt | sed 's/.*device //; s/ us\/step//') | awk '{printf "%-42s old %7s new %7s  %.3f\n", $1, $2, $3, $3/$2}'
grep -h "grad_weight" $R/kt_old.txt $R/kt_new.txt | cut -c1-110
timeout -s INT 150 python -m convt_op bench --configs float32:nchw:fwdbwd --device-time --out $OUT/train > $R/bench_train.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/train/results.md | tail -1; S=$(date +%s)
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "grad_weight or backward or training or sanitizer_smoke" --shard $k/4 > $R/tests_bwd_$k.log 2>&1 & done; wait
echo "tests bwd $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/tests_bwd_$k.log; grep FAILED $R/tests_bwd_$k.log | head -5; done
cd $OUT && tar czf logs.tgz r && rm -rf r
