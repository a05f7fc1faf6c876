#!/usr/bin/env bash
# run CO (eleventh session): NCHW grad_weight ring kernel (and the channels_last one with the
# idle-warpgroup rule): tests, memcheck, A/B against CONVT_BWD_GW_RING=0.
set -u
unset CXX CC
export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
T0=$SECONDS
F=$PWD/scratch/lead
PT="python3 -m pytest -q -p no:cacheprovider --tb=short"
python3 -c "import convt_op" > /tmp/b.log 2>&1 || { grep -m8 -iE "error" /tmp/b.log; tail -5 /tmp/b.log; exit 1; }
echo "build ok ($((SECONDS-T0))s)"
timeout 200 $PT tests/test_cuda.py -k "grad_weight or backward" > /tmp/t1.log 2>&1; echo "gw/backward rc=$? ($((SECONDS-T0))s) $(tail -n 1 /tmp/t1.log)"; grep -E "^(FAILED|ERROR)" /tmp/t1.log | head -8; grep -E "^E  " /tmp/t1.log | head -8
CONVT_BWD_GW_RING=0 timeout 100 $PT tests/test_cuda.py -k "grad_weight_wgmma" > /tmp/t2.log 2>&1; echo "RING=0 rc=$? $(tail -n 1 /tmp/t2.log)"; grep -E "^(FAILED|ERROR)" /tmp/t2.log | head -5
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $PT tests/test_cuda.py -k "test_grad_weight_wgmma and not channels_last and bf16" > /tmp/san.log 2>&1; echo "memcheck rc=$? ($((SECONDS-T0))s) $(grep -E 'ERROR SUMMARY|passed|failed' /tmp/san.log | tail -n 2 | tr '\n' ' ')"; grep -E "^(FAILED|ERROR)" /tmp/san.log | head -3
for r in 0 1; do echo "== grad_weight alone, RING=$r"; CONVT_BWD_GW_RING=$r python3 $F/gwprof.py bf16 kb1_57 kb1_69 kb2_10 2>&1 | grep -v -i warn | grep -E "==|grad_weight_wgmma"; done
for r in 0 1; do CONVT_BWD_GW_RING=$r timeout 150 python3 -m convt_op bench --shapes kb1_57,kb1_65,kb1_69,kb1_71,kb1_78,kb2_10 --configs bfloat16:nchw:fwdbwd,float16:nchw:fwdbwd,bfloat16:channels_last:fwdbwd --out /tmp/ring$r > /dev/null 2>&1; done
python3 -m convt_op bench-report /tmp/ring1 --against /tmp/ring0 --threshold 0.03 | sed -n '/Against the base/,$p'
bash $F/save_build.sh
echo "total $((SECONDS-T0))s"
