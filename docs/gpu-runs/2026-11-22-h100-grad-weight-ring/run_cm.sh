#!/usr/bin/env bash
# run CM (eleventh session): main with the three experiments as defaults (bf16/fp16 wgmma forward
# 4x128, tall tiles, channels_last grad_weight on wgmma at 32 channels): whole test_cuda, memcheck
# of the new paths, then run_next_a's measurements (dcgan LT A/B, narrow rows, profiles, ncu).
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
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $PT tests/test_cuda.py -k "(small_image_batches and (bf16 or fp32_tf32)) or (forward_channels_last_in_place and bf16) or grad_weight_wgmma_channels_last_in_place" > /tmp/san.log 2>&1; echo "memcheck rc=$? ($((SECONDS-T0))s) $(grep -E 'ERROR SUMMARY|passed|failed' /tmp/san.log | tail -n 2 | tr '\n' ' ')"
for lt in 1 0; do CONVT_GEMM_LT=$lt timeout 90 python3 -m convt_op bench --shapes dcgan --repeat 3 --configs float32:channels_last:fwd,bfloat16:channels_last:fwd,bfloat16:nchw:fwdbwd --out /tmp/dc$lt > /dev/null 2>&1; done
echo "--- dcgan, CONVT_GEMM_LT=0 (base) against 1"; python3 -m convt_op bench-report /tmp/dc1 --against /tmp/dc0 --threshold 0.0 | sed -n '/Against the base/,$p'
grep -E "^\| dcgan" /tmp/dc1/results.md | cut -d'|' -f2,3,5,6,7,8,9,10,11
for lt in 1 0; do CONVT_GEMM_LT=$lt CONVT_GEMM_LAYOUT=direct timeout 60 python3 -m convt_op bench --shapes unet_up4,maskrcnn --configs float32:channels_last:fwd --out /tmp/nr$lt > /dev/null 2>&1; echo "direct LT=$lt"; grep -E "^\| (unet|mask)" /tmp/nr$lt/results.md | cut -d'|' -f2,3,5,6,7,8,9,10; done
python3 $F/bprof2.py bf16 cl kb1_71 kb1_78 unet_up4 2>&1 | grep -v -i warn
for cl in 0 1; do GWPROF_CL=$cl timeout 120 ncu --clock-control none --kernel-name regex:grad_weight_wgmma --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy python3 $F/gwprof.py bf16 kb1_57 > /tmp/ncu$cl.txt 2>&1; echo "== ncu CL=$cl"; grep -E "Duration|Throughput|Hit Rate|Stall|Warp Cycles|Achieved Occupancy|Registers|L1/TEX|L2 " /tmp/ncu$cl.txt | head -30; cp /tmp/ncu$cl.txt $OUT/; done
bash $F/save_build.sh
echo "total $((SECONDS-T0))s"
