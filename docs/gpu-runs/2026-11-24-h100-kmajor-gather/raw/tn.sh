# Run TN: HEAD (quarter staging + route for 21 taps, channels_last vector gather, K-major TF32 weights on the NCHW GEMM): tests of the changed paths, then the benchmark of record (11 configs, --device-time) + strict fp32.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=4 timeout -s INT 150 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "test_forward_nchw_via_channels_last" > $R/tests_via.log 2>&1 &
OMP_NUM_THREADS=4 timeout -s INT 150 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "gather or gemm or kernel_equals_stride" > $R/tests_gemm.log 2>&1 &
wait; echo "tests $(( $(date +%s)-S )) s"; for f in via gemm; do echo "$f: $(tail -1 $R/tests_$f.log)"; grep FAILED $R/tests_$f.log; done; S=$(date +%s)
timeout -s INT 215 python -m convt_op bench --configs record --device-time --out $OUT/record > $R/bench_record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 40 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/record/strict-fp32 > $R/bench_strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"
grep -A14 "geomean speedup" $OUT/record/results.md | head -14
cd $OUT && tar czf logs.tgz r && rm -rf r
