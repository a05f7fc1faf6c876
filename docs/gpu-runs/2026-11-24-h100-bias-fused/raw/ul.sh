# Run UL: compute-sanitizer memcheck / racecheck on the grad_bias-summing kernels (scratch/lead/san_bias.py), then the host-bound rows' timing loop (scripts/bench_loop_probe.py) with the C++ host trace.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for run in memcheck: memcheck:all racecheck:; do
  tool=${run%%:*}; via=${run#*:}
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 CONVT_BWD_GW_VIA_CL=$via timeout 100 compute-sanitizer --tool $tool --error-exitcode 3 --print-limit 20 python scratch/lead/san_bias.py > $R/san_${tool}_${via:-default}.log 2>&1
  echo "$tool via=${via:-default} rc=$? $(( $(date +%s)-S )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_${tool}_${via:-default}.log | tail -1) $(tail -1 $R/san_${tool}_${via:-default}.log)"; S=$(date +%s)
done
CONVT_HOST_TRACE=1 timeout 120 python scripts/bench_loop_probe.py dcgan_g2:float32:nchw dcgan_g4:float32:nchw unet_up4:float32:nchw > $R/loop_probe.txt 2> $R/host_trace.txt
echo "probe rc=$? $(( $(date +%s)-S )) s"; cat $R/loop_probe.txt; head -40 $R/host_trace.txt
cd $OUT && tar czf logs.tgz r && rm -rf r
