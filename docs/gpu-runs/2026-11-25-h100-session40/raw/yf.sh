# Run YF (main d0195a9): host time per call of the small steps without the profiler (scratch/lead/host_clean.py),
# our C++ sections by CONVT_HOST_TRACE=1.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
nproc; cat /proc/loadavg
for row in dcgan_g2:float32:nchw dcgan_g2:bfloat16:channels_last dcgan_g4:bfloat16:channels_last; do
  CONVT_HOST_TRACE=1 timeout 120 python scratch/lead/host_clean.py $row > $R/host_$row.txt 2>&1; grep -E "calib|##" $R/host_$row.txt; grep -A40 "convt host trace" $R/host_$row.txt | head -34
done
echo "host $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
