# Run WA: tall tiles in the warp-specialized forward (uncommitted): build; the fused-bias tests (9a7210a, not yet run) and
# the ws / route tests with the new tall-tile test; sanitizer; dcgan_g2 forward kernel times per route.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
export OMP_NUM_THREADS=4
timeout -s INT 280 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused" > $R/t_bias.log 2>&1 &
timeout -s INT 280 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "tall_tiles or tile_kinds or forced_tile_width or warp_specialized_knobs" > $R/t_tall.log 2>&1 &
timeout -s INT 280 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "channels_last_warp_specialized or via_channels_last or residue" > $R/t_ws.log 2>&1 &
wait
echo "tests $(( $(date +%s)-S )) s"; for f in $R/t_*.log; do echo "$f: $(tail -1 $f)"; grep FAILED $f | head -5; grep -m3 -A40 "^____" $f | grep -E "^E " | cut -c1-300 | head -6; done; S=$(date +%s)
timeout 120 compute-sanitizer --tool memcheck python scratch/lead/san_tall.py > $R/san_memcheck.log 2>&1; echo "memcheck rc=$? $(grep -c 'rel err' $R/san_memcheck.log) cases; $(grep -E 'ERROR SUMMARY' $R/san_memcheck.log)"
timeout 150 compute-sanitizer --tool racecheck python scratch/lead/san_tall.py > $R/san_racecheck.log 2>&1; echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $R/san_racecheck.log)"
echo "sanitizer $(( $(date +%s)-S )) s"; S=$(date +%s)
kt() { local tag=$1; shift; env "$@" KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $SPECS > $R/kt_$tag.txt 2>&1; }
SPECS="dcgan_g2:float32:nchw:fwd dcgan_g2:bfloat16:nchw:fwd dcgan_g2:float32:channels_last:fwd dcgan_g2:bfloat16:channels_last:fwd"
kt default
timeout 90 python scripts/kernel_times.py $SPECS > $R/kt_pytorch.txt 2>&1
SPECS="dcgan_g2:float32:nchw:fwd dcgan_g2:bfloat16:nchw:fwd"; kt via_tall CONVT_FWD_VIA_CL=all; kt via_one CONVT_FWD_VIA_CL=all CONVT_FWD_WS_TALL=0
SPECS="dcgan_g2:float32:channels_last:fwd dcgan_g2:bfloat16:channels_last:fwd"; kt ws_tall CONVT_FWD_PATH=wgmma; kt ws_one CONVT_FWD_PATH=wgmma CONVT_FWD_WS_TALL=0
SPECS="dcgan_g2:float32:nchw:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd"; kt step_default; kt step_own CONVT_FWD_VIA_CL=all CONVT_BWD_COLS=off
echo "kernel times $(( $(date +%s)-S )) s"
for f in $R/kt_*.txt; do echo "== $(basename $f)"; grep -A3 "^##" $f | cut -c1-150; done
cd $OUT && tar czf logs.tgz r && rm -rf r
