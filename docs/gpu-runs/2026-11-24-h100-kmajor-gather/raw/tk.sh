# Run TK: the NCHW small-plane gather (46.7 us in TJ against the rows kernel's 26.4 on dcgan_g2 float32): plane order A/B (image-major, channel-major, rows kernel) and ncu of both kernels.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="dcgan_g2:float32:nchw:fwd dcgan_g2:bfloat16:nchw:fwd"
export KT_OURS_ONLY=1
for v in 1 co 0; do CONVT_FWD_GATHER_SMALL_PLANES=$v timeout 40 python scripts/kernel_times.py $ROWS > $R/kt_$v.txt 2>&1; echo "== $v"; grep -h "## \|col2im" $R/kt_$v.txt | cut -c1-100; done
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section SchedulerStats --section LaunchStats"
timeout 60 ncu --clock-control none $SEC -k regex:col2im --launch-skip 3 --launch-count 1 python scratch/lead/wide_probe.py dcgan_g2:float32:nchw > $R/ncu_small.txt 2>&1; echo "ncu rc=$? $(( $(date +%s)-S )) s"
CONVT_FWD_GATHER_SMALL_PLANES=0 timeout 60 ncu --clock-control none $SEC -k regex:col2im --launch-skip 3 --launch-count 1 python scratch/lead/wide_probe.py dcgan_g2:float32:nchw > $R/ncu_rows.txt 2>&1; echo "ncu rc=$? $(( $(date +%s)-S )) s"
CONVT_FWD_GATHER_SMALL_PLANES=co timeout 60 ncu --clock-control none $SEC -k regex:col2im --launch-skip 3 --launch-count 1 python scratch/lead/wide_probe.py dcgan_g2:float32:nchw > $R/ncu_co.txt 2>&1; echo "ncu rc=$? $(( $(date +%s)-S )) s"
for f in small rows co; do echo "== $f"; grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Achieved Occupancy|Theoretical Occupancy|Block Limit|Registers Per|Eligible Warps|Issued Warp|Memory Throughput" $R/ncu_$f.txt | head -16; done
cd $OUT && tar czf logs.tgz r && rm -rf r
