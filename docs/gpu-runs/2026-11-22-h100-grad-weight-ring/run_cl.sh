#!/usr/bin/env bash
# Part B, prepared in the tenth session for the next one (see its closing note): one build of
# branch exp/next-session (scratch/lead/next = main + three knob-gated experiments), then A/Bs:
#   CONVT_FWD_WG=4x128    the wgmma forward with four m64n128 warpgroups (branch exp/fwd-4wg-n128)
#   CONVT_FWD_TALL=1      tall tiles for small-image batches (branch exp/fwd-tall-tiles)
#   CONVT_BWD_GW_CL32=1   channels_last grad_weight on wgmma at 32 channels (branch exp/gw-cl-32ch)
set -u
unset CXX CC
T0=$SECONDS
F=$PWD/scratch/lead
cd $F/next
export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
PT="python3 -m pytest -q -p no:cacheprovider --tb=short"
python3 -c "import convt_op" > /tmp/b.log 2>&1 || { grep -m8 -iE "error" /tmp/b.log; tail -5 /tmp/b.log; exit 1; }
echo "build ok ($((SECONDS-T0))s)"
timeout 120 $PT tests/test_cuda.py -k "forward or grad_weight_wgmma or sanitizer_smoke" > /tmp/t0.log 2>&1; echo "knobs off rc=$? $(tail -n 1 /tmp/t0.log)"; grep -E "^(FAILED|ERROR)" /tmp/t0.log | head -5
CONVT_FWD_WG=4x128 timeout 120 $PT -x tests/test_cuda.py -k "forward or as_forward or sanitizer_smoke" > /tmp/t1.log 2>&1; echo "WG=4x128 rc=$? $(tail -n 1 /tmp/t1.log)"; grep -E "^(FAILED|ERROR)|Error" /tmp/t1.log | head -5
CONVT_FWD_TALL=1 timeout 120 $PT -x tests/test_cuda.py -k "forward or as_forward or sanitizer_smoke" > /tmp/t2.log 2>&1; echo "TALL=1 rc=$? $(tail -n 1 /tmp/t2.log)"; grep -E "^(FAILED|ERROR)|Error" /tmp/t2.log | head -5
CONVT_BWD_GW_CL32=1 timeout 120 $PT -x tests/test_cuda.py -k "grad_weight_wgmma or (backward and channels_last)" > /tmp/t3.log 2>&1; echo "GW_CL32=1 rc=$? $(tail -n 1 /tmp/t3.log)"; grep -E "^(FAILED|ERROR)|Error" /tmp/t3.log | head -5
echo "--- forward, CONVT_FWD_WG 2x256 against 4x128 (ours ms, speedup)"
for k in 2x256 4x128; do CONVT_FWD_WG=$k timeout 90 python3 -m convt_op bench --shapes kb1_57,kb1_69,kb1_71,kb2_2,kb2_5,kb2_10,dcgan_g4 --configs float32:nchw:fwd,bfloat16:nchw:fwd,bfloat16:channels_last:fwd --out /tmp/wg$k > /dev/null 2>&1; done
python3 -m convt_op bench-report /tmp/wg4x128 --against /tmp/wg2x256 --threshold 0.03 | sed -n '/Against the base/,$p'
echo "--- small images, CONVT_FWD_TALL 0 against 1"
for k in 0 1; do CONVT_FWD_TALL=$k timeout 60 python3 -m convt_op bench --shapes dcgan_g4,kb2_93 --repeat 3 --configs float32:nchw:fwd,bfloat16:nchw:fwd,bfloat16:channels_last:fwd,float32:nchw:fwdbwd --out /tmp/tall$k > /dev/null 2>&1; done
python3 -m convt_op bench-report /tmp/tall1 --against /tmp/tall0 --threshold 0.03 | sed -n '/Against the base/,$p'
echo "--- 32-channel channels_last grad_weight, CONVT_BWD_GW_CL32 0 against 1"
for k in 0 1; do CONVT_BWD_GW_CL32=$k timeout 60 python3 -m convt_op bench --shapes kb1_71,kb1_78 --configs bfloat16:channels_last:fwdbwd,float16:channels_last:fwdbwd --out /tmp/cl32$k > /dev/null 2>&1; done
python3 -m convt_op bench-report /tmp/cl321 --against /tmp/cl320 --threshold 0.03 | sed -n '/Against the base/,$p'
CONVT_OP_BUILD_DIR=$PWD/.devbuild bash $F/save_build.sh
echo "total $((SECONDS-T0))s"
