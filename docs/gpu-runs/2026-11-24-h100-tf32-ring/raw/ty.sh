# Run TY: branch wip/tf32-grad-weight-ring (rebased on main 80dae1b+): SASS spill check of the TF32 ring kernels, every grad_weight test, kernel times (rows, one-row, ring), float32 NCHW training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
SO=$(find .devbuild -name '*.so' | head -1); echo "so: $SO"
cuobjdump -sass $SO > $R/all.sass 2>/dev/null
python scratch/lead/sass_spills.py $R/all.sass tf32_ring_kernel tf32_kernel | tee $R/sass_spills.txt
for k in 1 2 3 4; do OMP_NUM_THREADS=4 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "grad_weight or sanitizer_smoke" --shard $((k-1))/4 > $R/tests_gw_$k.log 2>&1 & done; wait
echo "tests gw $(( $(date +%s)-S )) s"; for k in 1 2 3 4; do tail -1 $R/tests_gw_$k.log; grep FAILED $R/tests_gw_$k.log; done; S=$(date +%s)
ROWS="kb1_69_k3x5:float32:nchw:fwdbwd kb1_57_square:float32:nchw:fwdbwd kb2_10_k3_p1:float32:nchw:fwdbwd kb1_65_k3x7:float32:nchw:fwdbwd"
KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_ring.txt 2>&1
CONVT_BWD_GW_TF32=all CONVT_BWD_GW_TF32_RING=0 KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_one_row.txt 2>&1
CONVT_BWD_GW_TF32=0 KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_rows.txt 2>&1
for f in rows one_row ring; do echo "== $f"; grep -h "^## \|grad_weight\|wall" $R/kt_$f.txt | cut -c1-120; done
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
(cd $OUT && tar czf logs.tgz r)
timeout -s INT 70 python -m convt_op bench --configs float32:nchw:fwdbwd --device-time --out $OUT/train > $R/bench_train.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/train/results.md | tail -1
cd $OUT && tar czf logs.tgz r && rm -rf r
