# Run TZ: ring kernel, grad_output rows staged by warpgroup 1 (default) against warpgroup 0 (knob); ncu of the ring kernel (kb1_69); float32 NCHW training kernels of every row; whole tests/test_cuda.py.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="kb1_69_k3x5:float32:nchw:fwdbwd kb1_57_square:float32:nchw:fwdbwd kb2_10_k3_p1:float32:nchw:fwdbwd"
export KT_OURS_ONLY=1
timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_go_wg1.txt 2>&1
CONVT_BWD_GW_TF32_RING_GO_WG=0 timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_go_wg0.txt 2>&1
for f in go_wg0 go_wg1; do echo "== $f"; grep -h "^## \|grad_weight_wgmma" $R/kt_$f.txt | cut -c1-110; done
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section SchedulerStats --section LaunchStats --section ComputeWorkloadAnalysis"
timeout 90 ncu --clock-control none $SEC -k regex:tf32_ring --launch-skip 2 --launch-count 1 python scratch/lead/gw_probe.py kb1_69_k3x5:float32:nchw 4 > $R/ncu_ring.txt 2>&1; echo "ncu rc=$? $(( $(date +%s)-S )) s"
grep -E "Duration|Elapsed Cycles|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Cache|L2 Cache Throughput|Shared|Eligible Warps|Issued Warp|No Eligible|Registers Per|Achieved Occupancy|Stall|Warp Cycles Per Issued" $R/ncu_ring.txt | head -30
S=$(date +%s)
ALL=""; for s in kb1_57_square kb1_65_k3x7 kb1_69_k3x5 kb1_71_rect_k3 kb1_75_grp_dil_str kb1_78_pad_k3x7 kb1_81_s5_d2 kb2_2_s2_op1 kb2_5_k4_s2 kb2_10_k3_p1 kb2_93_k4_s2 unet_up4 unet_up1 dcgan_g2 dcgan_g4 maskrcnn_mask depthwise_s2 depthwise_k4s2; do ALL="$ALL $s:float32:nchw:fwdbwd"; done
timeout 80 python scripts/kernel_times.py $ALL > $R/kt_all_fp32_training.txt 2>&1; echo "kt all rc=$? $(( $(date +%s)-S )) s"
unset KT_OURS_ONLY; rm -f $R/*.sass
(cd $OUT && tar czf logs.tgz r)
S=$(date +%s)
for k in 0 1 2 3 4 5; do OMP_NUM_THREADS=2 timeout -s INT 270 python -m pytest -q -rf --durations=5 tests/test_cuda.py -p no:cacheprovider --shard $k/6 > $R/test_cuda_$k.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5; do tail -1 $R/test_cuda_$k.log; grep FAILED $R/test_cuda_$k.log; done
cd $OUT && tar czf logs.tgz r && rm -rf r
