# Run YK (warm after YJ, the same tree: wide tiles for float32 with streamed weights): the benchmark of record
# (11 configs, --device-time) + strict fp32.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }; echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 300 python -m convt_op bench --configs record --device-time --out $OUT/record > $R/bench_record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 45 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/strict > $R/bench_strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"
grep -A16 "geomean speedup" $OUT/record/results.md | head -14
cd $OUT && tar czf logs.tgz r && rm -rf r
