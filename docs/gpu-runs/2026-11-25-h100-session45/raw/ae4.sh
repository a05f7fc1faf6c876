# AE4 (fresh machine): grad_input alone through the ws forward only where neither grad_weight nor grad_bias is asked
# for (the copy sums grad_bias: test_backward_bias_fused_columns_cl failed in AE3); the GPU tests that reach the
# changed dispatch; the depthwise kernels alone in three dtypes (fp16 ran 0.374 ms against bf16's 0.284 in AE3);
# ncu of the channels kernel, grad_input alone, fp16 against bf16.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
K="grad_input_alone or bias_fused or depthwise_backward or kernel_equals_stride or output_mask or residue_planes or as_forward or sanitizer_smoke"
for k in 0 1 2 3 4 5; do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 200 python -m pytest tests/test_cuda.py -q -k "$K" --shard $k/6 -p no:cacheprovider > $R/tests_$k.log 2>&1 & done; wait
for k in 0 1 2 3 4 5; do echo "tests $k: $(tail -1 $R/tests_$k.log)"; done; grep -h "^FAILED\|^ERROR" $R/tests_*.log | head -20; echo "tests $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 90 python -m convt_op bench --configs float16:channels_last:grad_input,bfloat16:channels_last:grad_input,float16:channels_last:grad_weight,bfloat16:channels_last:grad_weight,float32:channels_last:grad_input --shapes depthwise_s2,depthwise_k4s2 --repeat 3 --device-time --out $R/dw > $R/dw.log 2>&1; echo "dw rc=$?"
grep "^| depth" $R/dw.log | cut -d'|' -f2,3,5,6,7,8,9,10,12,13
for dt in float16 bfloat16; do
  PYTHONPATH=$M timeout 90 ncu --clock-control none --kernel-name regex:depthwise_backward_channels --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats python scratch/lead/ncu_bwd.py depthwise_s2 $dt channels_last grad_input > $R/ncu_$dt.txt 2>&1
  echo "== ncu $dt rc=$?"; grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|L1/TEX Hit|L2 Hit|Warp Cycles Per Issued|Mem Busy|Max Bandwidth|Block Limit Reg|SM Frequency|Dynamic Shared|Waves Per SM" $R/ncu_$dt.txt | sed 's/  */ /g' | head -20
done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
