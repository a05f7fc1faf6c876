# AE2 (fresh machine): the depthwise backward's channels kernel per set of gradients (kGi / kGw), two pixels per step,
# every load first; grad_input alone on kernel == stride channels_last 16-bit layers through the ws forward.
# Build; the GPU tests that reach them (4 shards in parallel); bench: each backward kernel alone (--configs kernels,
# the per-kernel dataset) and the depthwise training rows; float32 grad_input alone on kernel == stride under the knobs.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
K="depthwise_backward or kernel_equals_stride or output_mask or residue_planes or grad_input_alone or sanitizer_smoke"
for k in 0 1 2 3; do OMP_NUM_THREADS=1 timeout 170 python -m pytest tests/test_cuda.py -q -k "$K" --shard $k/4 -p no:cacheprovider > $R/tests_$k.log 2>&1 & done; wait
for k in 0 1 2 3; do echo "tests $k: $(tail -1 $R/tests_$k.log)"; done; grep -h "^FAILED\|^ERROR" $R/tests_*.log | head -20; echo "tests $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 60 python -m convt_op bench --configs bfloat16:channels_last:fwdbwd,float32:channels_last:fwdbwd,bfloat16:nchw:fwdbwd --shapes depthwise_s2,depthwise_k4s2 --device-time --out $R/dw > $R/dw.log 2>&1; echo "dw rc=$?"
grep "^| depthwise" $R/dw.log | cut -d'|' -f2,3,5,6,7,8,9,10,13
for v in "X=1" "CONVT_BWD_S2D=off CONVT_BWD_GI=forward"; do t=$(echo $v | tr ' =' '__')
  env $v PYTHONPATH=$M timeout 40 python -m convt_op bench --configs float32:channels_last:grad_input --shapes unet_up1,maskrcnn_mask,unet_up4 --device-time --out $R/f32gi_$t > $R/f32gi_$t.log 2>&1
  echo "== fp32 CL gi alone $v rc=$?"; grep "^| \(unet\|mask\)" $R/f32gi_$t.log | cut -d'|' -f2,3,5,7,8,9,10,11
done
E=$(( $(date +%s)-S )); PYTHONPATH=$M timeout $((585-E)) python -m convt_op bench --configs kernels --device-time --out $OUT/kernels > $R/kernels.log 2>&1; echo "kernels rc=$? $(( $(date +%s)-S )) s"
grep -B2 -A10 "geomean speedup" $OUT/kernels/results.md | head -14
cd $OUT && tar czf r.tgz r && rm -rf r
