# Run TA: build wip/bench-device-time (ba39a04); sync probe of small rows; CPU profile; bench --device-time on small training rows.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
du -sh .devbuild; ls -la .devbuild/*/*.so
ROWS="dcgan_g2:float32:nchw:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd dcgan_g4:float32:nchw:fwdbwd dcgan_g4:bfloat16:channels_last:fwdbwd unet_up4:float32:nchw:fwdbwd unet_up4:bfloat16:channels_last:fwdbwd dcgan_g4:float32:nchw:fwd unet_up4:float32:nchw:fwd dcgan_g2:float32:nchw:fwd kb1_71_rect_k3:float32:nchw:fwd"
timeout 150 python scratch/lead/syncprobe.py $ROWS > $R/syncprobe.txt 2>&1; echo "probe rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout 60 python scratch/lead/cpuprof.py dcgan_g2:float32:nchw:fwdbwd dcgan_g4:bfloat16:channels_last:fwdbwd > $R/cpuprof.txt 2>&1; echo "cpuprof rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout 120 python -m convt_op bench --configs float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd,bfloat16:channels_last:fwdbwd --shapes dcgan_g2,dcgan_g4,unet_up4,maskrcnn --device-time --out $OUT/devtime > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
cat $R/syncprobe.txt
tail -3 $R/bench.log; grep "^| " $OUT/devtime/results.md | tail -13 | cut -d'|' -f2-13
cd $OUT && tar czf logs.tgz r && rm -rf r
