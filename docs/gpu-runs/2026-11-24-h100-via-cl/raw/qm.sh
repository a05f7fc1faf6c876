# Run QM: the plane kernel by blocks of one channel and several images; targeted tests, kernel_times default vs CONVT_S2D_PLANE=0, memcheck, then the benchmark of record (11 configs + strict fp32).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="columns or s2d or kernel_equals_stride or sanitizer_smoke or igemm or gemm_cublaslt or backward_channels_last"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 130 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-200 | head -20
S=$(date +%s)
OUT=$R/san GPU_CHECK_STEPS=memcheck GPU_CHECK_MEMCHECK_K="sanitizer_smoke and (cols_gemm or s2d or cols_swap)" TIMEOUT_SANITIZER=60 bash scripts/gpu_check.sh > $R/san.txt 2>&1; grep -i "summary\|memcheck " $R/san.txt | tail -3
KT="dcgan_g4:bfloat16:nchw:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd dcgan_g2:float32:nchw:fwdbwd"
python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1
CONVT_S2D_PLANE=0 python scripts/kernel_times.py $KT > $R/kt_off.txt 2>&1
for f in kt_default kt_off; do echo "== $f"; grep -E "^## .*ours|space_to_depth" $R/$f.txt | cut -c1-110; done
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 200 python -m convt_op bench --configs record --out $OUT/record > $R/bench_record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S )) s"
timeout -s INT 45 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/record/strict-fp32 > $R/bench_strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"
grep -A14 "geomean speedup" $OUT/record/results.md | head -14
cd $OUT && tar czf logs.tgz r && rm -rf r
