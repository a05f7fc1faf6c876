# Fifty-first session, third call (AK3): the stride-1 rule of grad_weight_nchw_via_channels_last (stride1_copies_pay)
# checked: its test (three knob settings, fresh processes, the two new 2^24-element stride-1 cases) and the six
# stride-1 shapes' bf16 NCHW grad_weight alone and training under the rule (AK2 measured all / the old rule), fp16 two.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 130 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "test_grad_weight_nchw_via_channels_last" > $R/tests.log 2>&1; echo "tests rc=$? $(tail -1 $R/tests.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED\|^E " $R/tests.log | head -8
S1=kb1_57_square,kb1_65_k3x7,kb1_69_k3x5,kb1_71_rect_k3,kb1_78_pad_k3x7,kb2_10_k3_p1
PYTHONPATH=$M timeout 60 python -m convt_op bench --configs bfloat16:nchw:grad_weight,bfloat16:nchw:fwdbwd --shapes $S1 --device-time --out $R/rule > $R/rule.log 2>&1; echo "rule rc=$? $(( $(date +%s)-S )) s"
grep "^| kb" $R/rule.log | cut -d'|' -f2,6,7,8,9,10,11,13,16
PYTHONPATH=$M timeout 30 python -m convt_op bench --configs float16:nchw:grad_weight --shapes kb1_65_k3x7,kb1_71_rect_k3,kb1_57_square --device-time --out $R/rule_f16 > $R/rule_f16.log 2>&1; echo "rule f16 rc=$? $(( $(date +%s)-S )) s"
grep "^| kb" $R/rule_f16.log | cut -d'|' -f2,6,7,8,9,10,11,13,16
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
