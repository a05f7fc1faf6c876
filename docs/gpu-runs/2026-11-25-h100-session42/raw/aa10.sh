# Call AA10: build main; kernel breakdown of the small training rows, ours and PyTorch; host time per step (host_ab).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16 PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
timeout 150 python scripts/kernel_times.py dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd unet_up4:bfloat16:channels_last:fwdbwd dcgan_g2:float32:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd > $R/kt_small.txt 2>&1
grep -v Warning $R/kt_small.txt | grep -v _warn_once | cut -c1-150
ROUNDS=5 N=30 timeout 150 python scratch/lead/host_ab.py dcgan_g4:bfloat16:channels_last dcgan_g2:bfloat16:channels_last unet_up4:bfloat16:channels_last dcgan_g2:float32:nchw > $R/host_ab.txt 2>&1; grep "##" $R/host_ab.txt
cd $OUT && tar czf logs.tgz r && rm -rf r
