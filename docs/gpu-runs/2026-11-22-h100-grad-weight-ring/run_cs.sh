#!/usr/bin/env bash
# run CS (eleventh session): the review refactor of backward_grad_weight_wgmma.cu: whole test_cuda,
# the ring knob off, memcheck, and grad_weight timings against run CN / CO.
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
CONVT_BWD_GW_RING=0 timeout 100 $PT tests/test_cuda.py -k "grad_weight_wgmma" > /tmp/t2.log 2>&1; echo "RING=0 rc=$? $(tail -n 1 /tmp/t2.log)"; grep -E "^(FAILED|ERROR)" /tmp/t2.log | head -5
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $PT tests/test_cuda.py -k "test_grad_weight_wgmma and bf16" > /tmp/san.log 2>&1; echo "memcheck rc=$? ($((SECONDS-T0))s) $(grep -E 'ERROR SUMMARY|passed|failed' /tmp/san.log | tail -n 2 | tr '\n' ' ')"; grep -E "^(FAILED|ERROR)" /tmp/san.log | head -3
for cl in 1 0; do GWPROF_CL=$cl python3 $F/gwprof.py bf16 kb1_57 kb1_71 kb2_5 2>&1 | grep -v -i warn | grep -E "==|grad_weight_wgmma"; done
bash $F/save_build.sh
echo "total $((SECONDS-T0))s"
