# Call AD1 (fresh machine): build HEAD (tap loops with 32-bit descriptor adds); kernel times of the MMA-bound rows
# (against AB5's device times and AC3's ncu 836 us for kb1_69 bf16 CL); tests/test_cuda.py whole; a forward bench subset.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S0=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S0 )) s"
KT="kb1_69_k3x5:bfloat16:channels_last:fwd kb1_69_k3x5:float32:nchw:fwd kb1_69_k3x5:float32:channels_last:fwd kb1_57_square:bfloat16:channels_last:fwd kb2_10_k3_p1:bfloat16:nchw:fwd kb1_65_k3x7:bfloat16:channels_last:fwd kb2_5_k4_s2:bfloat16:channels_last:fwd unet_up1:bfloat16:channels_last:fwd maskrcnn_mask:bfloat16:channels_last:fwd kb1_69_k3x5:bfloat16:channels_last:fwdbwd"
(PYTHONPATH=$M KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $KT > $R/kt.txt 2>&1); grep -E "##" $R/kt.txt | cut -c1-150; echo "kt $(( $(date +%s)-S0 )) s"
S=$(date +%s)
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 260 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in $(seq 0 11); do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep -E "^FAILED|Interrupt" $f | head -3; done
LEFT=$(( 545 - ($(date +%s)-S0) )); echo "left for bench: $LEFT s"
if [ $LEFT -gt 30 ]; then timeout -s INT $LEFT env PYTHONPATH=$M python -m convt_op bench --configs bfloat16:channels_last:fwd,float32:nchw:fwd,float32:channels_last:fwd --shapes kb1_69,kb1_57,kb2_10,kb1_65,unet_up1,maskrcnn --device-time --out $OUT/fwd_subset > $R/fwd_subset.log 2>&1; echo "bench rc=$?"; grep "^| kb\|^| unet\|^| mask" $R/fwd_subset.log | cut -d'|' -f2-12; fi
echo "total $(( $(date +%s)-S0 )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
