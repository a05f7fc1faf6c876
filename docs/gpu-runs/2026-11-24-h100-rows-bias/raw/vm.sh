# Run VM: the tree of VK / VL: shard 3 of 8 of the other test files again (VL's timed out at 290 s), alone; then our C++ host trace (CONVT_HOST_TRACE=1) of the three host-bound float32 NCHW training rows, one process each.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
FILES=$(ls tests/test_*.py | grep -v "tests/test_cuda.py")
(OMP_NUM_THREADS=4 timeout -s INT 330 python -m pytest -q -rf $FILES -p no:cacheprovider --shard 3/8 > $R/other_3_of_8.log 2>&1) &
for spec in unet_up4:float32:nchw dcgan_g4:float32:nchw dcgan_g2:float32:nchw; do CONVT_HOST_TRACE=1 HA_WHO=ours timeout 60 python scratch/lead/host_api.py $spec > $R/host_trace_${spec%%:*}.txt 2>&1; done
HA_WHO=pytorch timeout 60 python scratch/lead/host_api.py unet_up4:float32:nchw > $R/host_pytorch_unet_up4.txt 2>&1
echo "host traces $(( $(date +%s)-S )) s"; for f in $R/host_trace_*.txt $R/host_pytorch_unet_up4.txt; do echo "== $f"; grep -v -i warn $f | grep -v "^  _warn" | head -60; done
wait; echo "other shard 3 $(( $(date +%s)-S )) s: $(tail -1 $R/other_3_of_8.log)"; grep FAILED $R/other_3_of_8.log | head
cd $OUT && tar czf logs.tgz r && rm -rf r
