# AE3 (fresh machine): tests/test_cuda.py whole on the depthwise channels kernel per set of gradients (two pixels
# per step) and grad_input alone on kernel == stride channels_last layers through the ws forward (16-bit and TF32);
# then grad_input alone on the rule's rows and the depthwise kernels alone.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S0=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S0 )) s"
S=$(date +%s)
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 270 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in $(seq 0 11); do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep -E "^FAILED|Interrupt" $f | head -3; done
LEFT=$(( 570 - ($(date +%s)-S0) )); echo "left for bench: $LEFT s"
if [ $LEFT -gt 30 ]; then timeout -s INT $LEFT env PYTHONPATH=$M python -m convt_op bench --configs float32:channels_last:grad_input,bfloat16:channels_last:grad_input,float16:channels_last:grad_input,bfloat16:channels_last:grad_weight,float32:channels_last:grad_weight --shapes unet_up1,maskrcnn_mask,unet_up4,depthwise_s2,depthwise_k4s2 --device-time --out $R/gi > $R/gi.log 2>&1; echo "bench rc=$?"; grep "^| unet\|^| mask\|^| depth" $R/gi.log | cut -d'|' -f2,3,5,6,7,8,9,10,15; fi
echo "total $(( $(date +%s)-S0 )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
