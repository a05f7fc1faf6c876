#!/usr/bin/env bash
# run CQ (eleventh session): closing benchmark on main (the build of run CP, carried), test_compile_cuda,
# the 9-configuration bench and its report against the newest benchmark folder.
set -u
unset CXX CC
export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
T0=$SECONDS
python3 -c "import convt_op" > /tmp/b.log 2>&1 || { grep -m8 -iE "error" /tmp/b.log; tail -5 /tmp/b.log; exit 1; }
echo "build ok ($((SECONDS-T0))s) $(grep -c building /tmp/b.log) builds"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_compile_cuda.py > /tmp/cc.log 2>&1; echo "test_compile_cuda rc=$? ($((SECONDS-T0))s) $(tail -n 1 /tmp/cc.log)"
mkdir -p $OUT/bench
timeout -s INT 330 python3 -m convt_op bench --configs float32:nchw:fwd,bfloat16:nchw:fwd,float32:channels_last:fwd,bfloat16:channels_last:fwd,float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd,float16:nchw:fwdbwd,float32:channels_last:fwdbwd,bfloat16:channels_last:fwdbwd --out $OUT/bench > /tmp/bench.log 2>&1; echo "bench rc=$? ($((SECONDS-T0))s)"
tail -3 /tmp/bench.log
BASE=docs/benchmarks/2026-11-22-h100-cublaslt-direct
python3 -m convt_op bench-report $OUT/bench --against $BASE > $OUT/bench/report.md; sed -n '/## Per configuration/,/## Speedup/p' $OUT/bench/report.md
echo "total $((SECONDS-T0))s"
