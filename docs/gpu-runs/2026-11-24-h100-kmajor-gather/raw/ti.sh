# Run TI: branch wip/f32-nchw-quarter-staging (454d339 on bdfb4f8): tests (row runs incl. f32_quarters, paired phases via the shared checker, route); float32 NCHW-out quarter staging A/B; host probes (allocator events, interleaved host split); dcgan_g4 bf16 CL kernels.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in row_runs paired nchw_via_channels_last; do
  OMP_NUM_THREADS=4 timeout -s INT 150 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k $k > $R/tests_$k.log 2>&1 &
done; wait; echo "tests $(( $(date +%s)-S )) s"; for k in row_runs paired nchw_via_channels_last; do echo "$k: $(tail -1 $R/tests_$k.log)"; grep FAILED $R/tests_$k.log; done; S=$(date +%s)
ROWS="kb1_78_pad_k3x7:float32:nchw:fwd kb1_69_k3x5:float32:nchw:fwd kb1_71_rect_k3:float32:nchw:fwd kb1_65_k3x7:float32:nchw:fwd kb1_78_pad_k3x7:float32:nchw:fwdbwd kb1_69_k3x5:float32:nchw:fwdbwd"
export KT_OURS_ONLY=1
CONVT_FWD_VIA_CL=0 timeout 80 python scripts/kernel_times.py $ROWS > $R/kt_nchw_kernel.txt 2>&1
CONVT_FWD_VIA_CL=all CONVT_FWD_WS_NCHW_QUARTERS=0 timeout 80 python scripts/kernel_times.py $ROWS > $R/kt_route_halves.txt 2>&1
CONVT_FWD_VIA_CL=all timeout 80 python scripts/kernel_times.py $ROWS > $R/kt_route_quarters.txt 2>&1
timeout 80 python scripts/kernel_times.py $ROWS > $R/kt_default.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
for f in kt_nchw_kernel kt_route_halves kt_route_quarters kt_default; do echo "== $f"; grep "^## " $R/$f.txt | sed 's/: wall [0-9]* us\/step,//'; done
unset KT_OURS_ONLY
timeout 60 python scripts/kernel_times.py dcgan_g4:bfloat16:channels_last:fwdbwd > $R/kt_dcgan_g4_cl.txt 2>&1
timeout 60 python scratch/lead/allocprobe.py dcgan_g2:float32:nchw dcgan_g4:float32:nchw unet_up4:bfloat16:channels_last > $R/allocprobe.txt 2>&1; cat $R/allocprobe.txt | cut -c1-220
timeout 100 python scratch/lead/hostsplit3.py dcgan_g2:float32:nchw dcgan_g4:float32:nchw unet_up4:bfloat16:channels_last > $R/hostsplit3.txt 2>&1; cat $R/hostsplit3.txt
echo "probes $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
