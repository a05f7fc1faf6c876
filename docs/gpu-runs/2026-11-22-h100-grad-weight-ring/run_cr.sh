#!/usr/bin/env bash
# run CR (eleventh session): the memcheck failure of run CM identified; ncu of the ring kernels and of the
# 4x128 wgmma forward (bf16 kb1_57), for the next session. The build of run CP, carried.
set -u
unset CXX CC
export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
T0=$SECONDS
F=$PWD/scratch/lead
PT="python3 -m pytest -q -p no:cacheprovider --tb=line -rf"
python3 -c "import convt_op" > /tmp/b.log 2>&1 || { grep -m8 -iE "error" /tmp/b.log; tail -5 /tmp/b.log; exit 1; }
echo "build ok ($((SECONDS-T0))s) $(grep -c building /tmp/b.log) builds"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $PT tests/test_cuda.py -k "(small_image_batches and (bf16 or fp32_tf32)) or (forward_channels_last_in_place and bf16) or grad_weight_wgmma_channels_last_in_place or nchw_ring_dispatch" > /tmp/san.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|passed|failed' /tmp/san.log | tail -n 2 | tr '\n' ' ')"; grep -E "^FAILED|Error|assert" /tmp/san.log | head -6 | cut -c1-400
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy"
for cl in 1 0; do GWPROF_CL=$cl timeout 120 ncu --clock-control none --kernel-name regex:grad_weight_wgmma --launch-count 1 $SEC python3 $F/gwprof.py bf16 kb1_57 > /tmp/ncu_r$cl.txt 2>&1; echo "== ncu ring CL=$cl"; grep -E "ring_kernel|Duration|Throughput|Hit Rate|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Est. Local Speedup|stalled" /tmp/ncu_r$cl.txt | head -24; cp /tmp/ncu_r$cl.txt $OUT/; done
for cl in 1 0; do timeout 120 ncu --clock-control none --kernel-name regex:wgmma_fwd_kernel --launch-skip 1 --launch-count 1 $SEC python3 $F/$([ $cl = 1 ] && echo fwd_once_cl.py || echo fwd_once.py) bf16 kb1_57 > /tmp/ncu_f$cl.txt 2>&1; echo "== ncu forward CL=$cl"; grep -E "wgmma_fwd_kernel<|Duration|Throughput|Hit Rate|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Dynamic Shared|Est. Local Speedup|stalled" /tmp/ncu_f$cl.txt | head -24; cp /tmp/ncu_f$cl.txt $OUT/; done
echo "total $((SECONDS-T0))s"
