#!/usr/bin/env bash
# run CT (eleventh session): branch exp/fwd-2x128-two-blocks: tests under CONVT_FWD_WG=2x128, A/B against
# the default (4x128 for 16-bit), ncu occupancy.
set -u
unset CXX CC
export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
T0=$SECONDS
F=$PWD/scratch/lead
PT="python3 -m pytest -q -p no:cacheprovider --tb=short"
python3 -c "import convt_op" > /tmp/b.log 2>&1 || { grep -m8 -iE "error" /tmp/b.log; tail -5 /tmp/b.log; exit 1; }
echo "build ok ($((SECONDS-T0))s)"
timeout 100 $PT tests/test_cuda.py -k "block_variants" > /tmp/t0.log 2>&1; echo "variants rc=$? $(tail -n 1 /tmp/t0.log)"; grep -E "^(FAILED|ERROR)|^E  " /tmp/t0.log | head -5 | cut -c1-300
CONVT_FWD_WG=2x128 timeout 150 $PT -x tests/test_cuda.py -k "forward or as_forward or sanitizer_smoke" > /tmp/t1.log 2>&1; echo "WG=2x128 rc=$? $(tail -n 1 /tmp/t1.log)"; grep -E "^(FAILED|ERROR)|^E  " /tmp/t1.log | head -5 | cut -c1-300
for k in 4x128 2x128; do CONVT_FWD_WG=$k timeout 100 python3 -m convt_op bench --shapes kb1_57,kb1_69,kb1_71,kb2_2,kb2_5,kb2_10,dcgan_g4 --configs bfloat16:nchw:fwd,bfloat16:channels_last:fwd --out /tmp/wg$k > /dev/null 2>&1; done
python3 -m convt_op bench-report /tmp/wg2x128 --against /tmp/wg4x128 --threshold 0.0 | sed -n '/Against the base/,$p'
CONVT_FWD_WG=2x128 timeout 100 ncu --clock-control none --kernel-name regex:wgmma_fwd_kernel --launch-skip 1 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats python3 $F/fwd_once.py bf16 kb1_57 > /tmp/ncu.txt 2>&1; grep -E "wgmma_fwd_kernel<|Duration|Throughput|Achieved Occupancy|Block Limit|Dynamic Shared|Registers Per" /tmp/ncu.txt | head -14
echo "total $((SECONDS-T0))s"
