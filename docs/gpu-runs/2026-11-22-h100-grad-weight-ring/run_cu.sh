#!/usr/bin/env bash
# run CU (eleventh session): main with 2x128 as the 16-bit default: whole test_cuda, then bf16 forward and
# training benches (NCHW and channels_last, all 18 shapes) against run CQ.
set -u
unset CXX CC
export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
T0=$SECONDS
python3 -c "import convt_op" > /tmp/b.log 2>&1 || { grep -m8 -iE "error" /tmp/b.log; tail -5 /tmp/b.log; exit 1; }
echo "build ok ($((SECONDS-T0))s)"
GPU_CHECK_STEPS=test GPU_CHECK_TEST_PATHS=tests/test_cuda.py TIMEOUT_TEST=260 bash scripts/gpu_check.sh > /tmp/gc.log 2>&1; RC=$?; echo "test_cuda rc=$RC ($((SECONDS-T0))s) $(grep pytest $OUT/summary.txt)"
grep -E "^(FAILED|ERROR)" $OUT/pytest.log | head -8; grep -E "^E  " $OUT/pytest.log | head -6
rm -f $OUT/junit.xml $OUT/log.txt $OUT/pytest.log $OUT/sanitizer.log $OUT/summary.txt
mkdir -p $OUT/bench
timeout -s INT 170 python3 -m convt_op bench --configs bfloat16:nchw:fwd,bfloat16:channels_last:fwd,bfloat16:nchw:fwdbwd,bfloat16:channels_last:fwdbwd --out $OUT/bench > /tmp/bench.log 2>&1; echo "bench rc=$? ($((SECONDS-T0))s)"
python3 -m convt_op bench-report $OUT/bench --against docs/benchmarks/2026-11-22-h100-grad-weight-ring --threshold 0.05 > $OUT/bench/report.md; sed -n '/## Per configuration/,/## Speedup/p' $OUT/bench/report.md; sed -n '/Against the base/,$p' $OUT/bench/report.md | head -40
echo "total $((SECONDS-T0))s"
