# Run TH: HEAD: memcheck on the 16-bit NCHW runs; the benchmark of record (11 configs, --device-time) + strict fp32 + backward kernels alone.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
CONVT_FWD_VIA_CL=all timeout 40 compute-sanitizer --tool memcheck python scratch/lead/runs_smoke.py > $R/san.txt 2>&1; echo "memcheck rc=$? $(( $(date +%s)-S )) s"; tail -1 $R/san.txt; grep torch $R/san.txt | cut -c1-100; S=$(date +%s)
timeout -s INT 220 python -m convt_op bench --configs record --device-time --out $OUT/record > $R/bench_record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 50 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/record/strict-fp32 > $R/bench_strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 70 python -m convt_op bench --configs float32:nchw:grad_input,float32:nchw:grad_weight,bfloat16:nchw:grad_input,bfloat16:nchw:grad_weight --out $OUT/bwd > $R/bench_bwd.log 2>&1; echo "bwd bench rc=$? $(( $(date +%s)-S )) s"
grep -A14 "geomean speedup" $OUT/record/results.md | head -14
cd $OUT && tar czf logs.tgz r && rm -rf r
