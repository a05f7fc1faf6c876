# Run RF: build HEAD (float32 residues need > 1 tap); targeted tests; the benchmark of record again (11 configs + strict fp32).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="grad_input_nchw_via or as_forward_default or kernel_equals_stride_nchw"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 100 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
timeout -s INT 220 python -m convt_op bench --configs record --out $OUT/record > $R/bench_record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 60 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/record/strict-fp32 > $R/bench_strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"
grep -A14 "geomean speedup" $OUT/record/results.md | head -14
cd $OUT && tar czf logs.tgz r && rm -rf r
