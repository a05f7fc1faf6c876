# Run QH: build 22c02dd, tests/test_cuda.py whole in 4 shards, then NCHW forward with and without CONVT_FWD_VIA_CL=1, kb1_69 tile width probe.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s); NS=4
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout 280 python -m pytest -q tests/test_cuda.py -p no:cacheprovider --shard $k/$NS > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | head -20
S=$(date +%s)
C=float32:nchw:fwd,bfloat16:nchw:fwd,float16:nchw:fwd
timeout 110 python -m convt_op bench --configs $C --out $R/nchw_default > $R/bench_default.log 2>&1; echo "bench default rc=$? $(( $(date +%s)-S )) s"
CONVT_FWD_VIA_CL=1 timeout 110 python -m convt_op bench --configs $C --out $R/nchw_viacl > $R/bench_viacl.log 2>&1; echo "bench viacl rc=$? $(( $(date +%s)-S )) s"
K="kb1_69_k3x5:bfloat16:channels_last kb1_69_k3x5:float32:channels_last kb1_69_k3x5:bfloat16:nchw dcgan_g4:bfloat16:nchw"
python scratch/lead/wide_probe.py $K > $R/probe_default.txt 2>&1
CONVT_FWD_WS_TX=60 python scratch/lead/wide_probe.py $K > $R/probe_tx60.txt 2>&1
CONVT_FWD_VIA_CL=1 python scratch/lead/wide_probe.py $K > $R/probe_viacl.txt 2>&1
for f in default tx60 viacl; do echo "== $f"; cut -c1-150 $R/probe_$f.txt; done
du -sh .devbuild; tar czf $OUT/devbuild.tgz .devbuild 2>/dev/null; ls -la $OUT/devbuild.tgz
cd $OUT && tar czf logs.tgz r && rm -rf r
