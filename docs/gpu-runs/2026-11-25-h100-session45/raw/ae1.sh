# Next session, call AE1 (fresh machine): build main; grad_input ALONE on the kernel == stride layers and the other
# bf16 channels_last rows that lose alone (AC3), default rule against the ws forward over grad_output's residues
# (CONVT_BWD_S2D=off CONVT_BWD_GI=forward) and against the native kernels (CONVT_BWD_S2D=off CONVT_BWD_GI=native);
# then the benchmark of record with --host-time (first record with it) and strict float32.
# carry: scratch/lead
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S0=$(date +%s)
# HGMMA throughput by operand layout (scratch/lead/wgmma_layout_bench.cu: does the ws forward's 32-byte-row B cost
# tensor rate?), ~30 s with its compile.
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DCONVT_SM90A_DEVICE $(python -c "from torch.utils.cpp_extension import include_paths; print(' '.join('-I'+p for p in include_paths()))") scratch/lead/wgmma_layout_bench.cu -o /tmp/wlb > $R/wlb_build.log 2>&1 && /tmp/wlb | tee $R/wlb.txt
PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S0 )) s"
SH=unet_up1,maskrcnn,unet_up4,depthwise_s2,kb1_81,kb2_2,kb2_5,kb2_93,dcgan_g4
for v in "X=1" "CONVT_BWD_S2D=off CONVT_BWD_GI=forward" "CONVT_BWD_S2D=off CONVT_BWD_GI=native"; do
  t=$(echo $v | tr ' =' '__'); env $v PYTHONPATH=$M timeout 120 python -m convt_op bench --configs bfloat16:channels_last:grad_input,float16:channels_last:grad_input --shapes $SH --device-time --out $R/gi_$t > $R/gi_$t.log 2>&1
  echo "== $v rc=$?"; grep "^| " $R/gi_$t.log | grep -v "^| shape\|^|---\|configuration" | cut -d'|' -f2,3,5,7,8,9,10 | head -20
done
echo "gi $(( $(date +%s)-S0 )) s"
E=$(( $(date +%s)-S0 )); if [ $E -lt 380 ]; then PYTHONPATH=$M timeout $((590-E)) python -m convt_op bench --configs record --device-time --host-time --out $OUT/record > $R/record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S0 )) s"; else echo "record skipped at $E s"; fi
tail -3 $R/record.log; cd $OUT && tar czf r.tgz r && rm -rf r
# (strict float32 in the next call: python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/strict)
