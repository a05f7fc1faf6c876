#!/usr/bin/env bash
# run CP (eleventh session): whole test_cuda on main with the ring kernels; host/kernel profiles of
# the small shapes that lose (dcgan, maskrcnn) and the fp32 NCHW training step.
set -u
unset CXX CC
export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
T0=$SECONDS
F=$PWD/scratch/lead
PT="python3 -m pytest -q -p no:cacheprovider --tb=short"
python3 -c "import convt_op" > /tmp/b.log 2>&1 || { grep -m8 -iE "error" /tmp/b.log; tail -5 /tmp/b.log; exit 1; }
echo "build ok ($((SECONDS-T0))s)"
GPU_CHECK_STEPS=test GPU_CHECK_TEST_PATHS=tests/test_cuda.py TIMEOUT_TEST=260 bash scripts/gpu_check.sh > /tmp/gc.log 2>&1; RC=$?; echo "test_cuda rc=$RC ($((SECONDS-T0))s) $(grep pytest $OUT/summary.txt)"
grep -E "^(FAILED|ERROR)" $OUT/pytest.log | head -8; grep -E "^E  " $OUT/pytest.log | head -6
rm -f $OUT/junit.xml $OUT/log.txt $OUT/pytest.log $OUT/sanitizer.log
python3 $F/hostprof.py f32 nchw dcgan_g2 dcgan_g4 maskrcnn 2>&1 | grep -v -i warn
python3 $F/hostprof.py bf16 cl dcgan_g2 dcgan_g4 2>&1 | grep -v -i warn | grep -E "==|host"
python3 $F/bprof2.py f32 nchw kb1_57 kb2_5 2>&1 | grep -v -i warn
bash $F/save_build.sh
echo "total $((SECONDS-T0))s"
