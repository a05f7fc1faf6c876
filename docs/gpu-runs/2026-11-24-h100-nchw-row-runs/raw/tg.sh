# Run TG: HEAD: test_grad_input_nchw_via_channels_last (both variants); float16 NCHW training benchmark rows.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD; R=$OUT/r; mkdir -p $R
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=4 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "grad_input_nchw_via_channels_last" > $R/gi_via.log 2>&1; tail -1 $R/gi_via.log; grep -E "FAILED|^E  " $R/gi_via.log | head -5
echo "test $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout 120 python -m convt_op bench --configs float16:nchw:fwdbwd --device-time --out $OUT/fp16 > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"; grep -A3 "geomean" $OUT/fp16/results.md | head -4
cd $OUT && tar czf logs.tgz r && rm -rf r
