# Next session, call AF1 (fresh machine): build main; which kernels float32 channels_last grad_input / grad_weight alone
# run on the strided KernelBench shapes (AE6: kb2_2 grad_input 5.06 ms against cuDNN's 0.894) and whether the ws forward
# over grad_output's residues read in place (CONVT_BWD_GI=forward) beats them; the same for the training steps.
# carry: scratch/lead
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
# cc435a3 (grad_input alone through the forward only where fwd::wgmma_available) and the staged depthwise kernel's x
# alignment check ran no GPU test: their tests first.
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 120 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "grad_input_alone or bias_fused_columns_cl or kernel_equals_stride or depthwise_backward" > $R/tests.log 2>&1; echo "tests: $(tail -1 $R/tests.log)"
PYTHONPATH=$M timeout 120 python scratch/lead/grad_kernels.py kb2_2_s2_op1:float32:channels_last:grad_input kb2_5_k4_s2:float32:channels_last:grad_input kb2_2_s2_op1:float32:channels_last:grad_weight kb2_5_k4_s2:float32:channels_last:grad_weight unet_up1:float32:channels_last:grad_weight > $R/gk.txt 2>&1; grep -A5 "^##" $R/gk.txt | cut -c1-140
SH=kb2_2_s2_op1,kb2_5_k4_s2,kb2_93_k4_s2,kb1_81_s5_d2,kb1_75_grp_dil_str,dcgan_g4
for v in "X=1" "CONVT_BWD_GI=forward"; do t=$(echo $v | tr ' =' '__')
  env $v PYTHONPATH=$M timeout 150 python -m convt_op bench --configs float32:channels_last:grad_input,float32:channels_last:fwdbwd --shapes $SH --device-time --out $R/f32cl_$t > $R/f32cl_$t.log 2>&1
  echo "== $v rc=$?"; grep "^| kb\|^| dcgan" $R/f32cl_$t.log | cut -d'|' -f2,3,5,6,7,8,9,10,13
done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
