# Fifty-first session, second call (AK2): bf16 NCHW grad_weight at stride 1 through channels_last copies (the knob now
# reaches stride 1; AK1's via_cl run measured the rule twice), its test, then ncu_worst's profiles.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 120 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "test_grad_weight_nchw_via_channels_last or test_backward_bias_fused_knob" > $R/tests.log 2>&1; echo "tests rc=$? $(tail -1 $R/tests.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED" $R/tests.log | head -5
S1=kb1_57_square,kb1_65_k3x7,kb1_69_k3x5,kb1_71_rect_k3,kb1_78_pad_k3x7,kb2_10_k3_p1
for v in all rule; do CONVT_BWD_GW_VIA_CL=$([ $v = all ] && echo all) PYTHONPATH=$M timeout 120 python -m convt_op bench --configs bfloat16:nchw:grad_weight,bfloat16:nchw:fwdbwd --shapes $S1 --device-time --out $R/via_cl_$v > $R/via_cl_$v.log 2>&1; echo "via_cl $v rc=$? $(( $(date +%s)-S )) s"; done
for v in all rule; do echo "-- via_cl $v"; grep "^| kb" $R/via_cl_$v.log | cut -d'|' -f2,6,7,8,9,10,11,13 | head -12; done
GK="kb1_65_k3x7:bfloat16:nchw:grad_weight kb1_78_pad_k3x7:bfloat16:nchw:grad_weight"
CONVT_BWD_GW_VIA_CL=all KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_all.txt 2>&1; echo "gk all rc=$?"; grep -E "##|^ " $R/gk_all.txt | cut -c1-110 | head -12
# float32 NCHW grad_weight alone where we lose to cuDNN (AK1: dcgan_g4 0.79x on the columns, maskrcnn 0.84x on the
# space-to-depth columns): the implicit kernels instead.
for kn in "" "CONVT_BWD_S2D=off" "CONVT_BWD_COLS=off" "CONVT_BWD_S2D=off CONVT_BWD_GW=rows" "CONVT_BWD_COLS=off CONVT_BWD_GW=rows"; do
  env $kn PYTHONPATH=$M timeout 60 python -m convt_op bench --configs float32:nchw:grad_weight --shapes dcgan_g4,maskrcnn_mask --device-time --out $R/small_$(echo "$kn" | tr ' =' '__') > $R/small_$(echo "$kn" | tr ' =' '__').log 2>&1
  echo "-- small [$kn] rc=$?"; grep "^| [dm]" $R/small_$(echo "$kn" | tr ' =' '__').log | cut -d'|' -f2,7,8,9,10,11,13,16
done
sed -e 's/^nvidia-smi -L; S=.*$/S0=$S/' scratch/lead/ncu_worst.sh | grep -v "^unset\|tar czf" > scratch/lead/ncu_body.sh
sed -i "s/560 - /500 - /" scratch/lead/ncu_body.sh; source scratch/lead/ncu_body.sh
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
