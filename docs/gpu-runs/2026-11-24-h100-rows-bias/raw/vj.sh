# Run VJ: host and device time of the small float32 NCHW steps (dcgan_g2, dcgan_g4) on our other kernel families: the forward through the warp-specialized kernel (CONVT_FWD_VIA_CL=all) and the backward off the cuBLAS columns (CONVT_BWD_COLS=off), against the default (cuBLAS). host_api.py: host us per forward / backward call with the GPU kept busy; kernel_times.py: device us per step.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
HA_WHO=pytorch timeout 60 python scratch/lead/host_api.py dcgan_g2:float32:nchw dcgan_g4:float32:nchw dcgan_g2:bfloat16:nchw > $R/host_pytorch.txt 2>&1; grep "^##" $R/host_pytorch.txt
for v in "default" "CONVT_FWD_VIA_CL=all" "CONVT_BWD_COLS=off" "CONVT_FWD_VIA_CL=all CONVT_BWD_COLS=off"; do
  tag=$(echo "$v" | tr ' =' '_-')
  env $([ "$v" = default ] || echo $v) HA_WHO=ours timeout 60 python scratch/lead/host_api.py dcgan_g2:float32:nchw dcgan_g4:float32:nchw dcgan_g2:bfloat16:nchw > $R/host_$tag.txt 2>&1
  env $([ "$v" = default ] || echo $v) KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py dcgan_g2:float32:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd > $R/kt_$tag.txt 2>&1
  echo "== $v ($(( $(date +%s)-S )) s)"; grep "^##" $R/host_$tag.txt; grep "^##" $R/kt_$tag.txt
done
KT_OURS_ONLY= timeout 60 python scripts/kernel_times.py dcgan_g2:float32:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd > $R/kt_pytorch.txt 2>&1; grep "^##" $R/kt_pytorch.txt
for f in $R/kt_*.txt; do echo "=== $f"; grep -v Warn $f | grep -v _warn_once | cut -c1-150; done
cd $OUT && tar czf logs.tgz r && rm -rf r
