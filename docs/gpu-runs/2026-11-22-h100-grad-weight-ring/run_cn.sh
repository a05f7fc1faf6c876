#!/usr/bin/env bash
# run CN (eleventh session): the channels_last grad_weight ring kernel (several kernel rows per
# block, grad_output rows in a ring): tests, memcheck, A/B against CONVT_BWD_GW_RING=0.
set -u
unset CXX CC
export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
T0=$SECONDS
F=$PWD/scratch/lead
PT="python3 -m pytest -q -p no:cacheprovider --tb=short"
python3 -c "import convt_op" > /tmp/b.log 2>&1 || { grep -m8 -iE "error" /tmp/b.log; tail -5 /tmp/b.log; exit 1; }
echo "build ok ($((SECONDS-T0))s)"
timeout 200 $PT tests/test_cuda.py -k "grad_weight or backward or block_variants" > /tmp/t1.log 2>&1; echo "gw/backward rc=$? ($((SECONDS-T0))s) $(tail -n 1 /tmp/t1.log)"; grep -E "^(FAILED|ERROR)" /tmp/t1.log | head -8; grep -E "^E  " /tmp/t1.log | head -8
CONVT_BWD_GW_RING=0 timeout 100 $PT tests/test_cuda.py -k "grad_weight_wgmma" > /tmp/t2.log 2>&1; echo "RING=0 rc=$? $(tail -n 1 /tmp/t2.log)"; grep -E "^(FAILED|ERROR)" /tmp/t2.log | head -5
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $PT tests/test_cuda.py -k "test_grad_weight_wgmma and channels_last and bf16" > /tmp/san.log 2>&1; echo "memcheck rc=$? ($((SECONDS-T0))s) $(grep -E 'ERROR SUMMARY|passed|failed' /tmp/san.log | tail -n 2 | tr '\n' ' ')"; grep -E "^(FAILED|ERROR)" /tmp/san.log | head -3
for r in 0 1; do echo "== grad_weight alone, RING=$r"; CONVT_BWD_GW_RING=$r GWPROF_CL=1 python3 $F/gwprof.py bf16 kb1_57 kb1_71 kb2_5 2>&1 | grep -v -i warn | grep -E "==|grad_weight"; done
for r in 0 1; do CONVT_BWD_GW_RING=$r timeout 120 python3 -m convt_op bench --shapes kb1_57,kb1_65,kb1_69,kb1_71,kb1_78,kb2_2,kb2_5,kb2_10,kb2_93 --configs bfloat16:channels_last:fwdbwd --out /tmp/ring$r > /dev/null 2>&1; done
python3 -m convt_op bench-report /tmp/ring1 --against /tmp/ring0 --threshold 0.03 | sed -n '/Against the base/,$p'
grep -E "^\| " /tmp/ring1/results.md | cut -d'|' -f2,3,5,6,7,8,9,10 | head -24
bash $F/save_build.sh
echo "total $((SECONDS-T0))s"
