# For the fifty-first session's first device call. Before it: `git apply
# docs/gpu-runs/2026-12-07-h100-session50/raw/nchw_rows_truncate.patch` (the knob CONVT_BWD_GW_ROWS_TF32=truncate
# in the float32 NCHW rows async kernel; default unchanged), and copy grad_kernels.py
# (../../2026-11-25-h100-session45/raw/) to scratch/lead/ with this script.
# Measures: the rows kernels' tests with and without the knob, float32 NCHW grad_weight alone on every suite shape both
# ways (the rows that run the async kernel move; the others are the control), per-kernel device times of the
# stride-2 rows; then bf16 NCHW grad_weight alone and training at stride 1 through channels_last copies against the rule.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
for v in round truncate; do CONVT_BWD_GW_ROWS_TF32=$v PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 150 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "test_grad_weight_rows or bias_fused_rows" > $R/tests_$v.log 2>&1; echo "tests $v rc=$? $(tail -1 $R/tests_$v.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED" $R/tests_$v.log | head -5; done
for v in truncate round; do CONVT_BWD_GW_ROWS_TF32=$v PYTHONPATH=$M timeout 150 python -m convt_op bench --configs float32:nchw:grad_weight --device-time --out $R/b_$v > $R/b_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-S )) s"; done
GK="kb2_2_s2_op1:float32:nchw:grad_weight kb2_5_k4_s2:float32:nchw:grad_weight kb2_93_k4_s2:float32:nchw:grad_weight"
for v in round truncate; do CONVT_BWD_GW_ROWS_TF32=$v KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_$v.txt 2>&1; echo "gk $v rc=$?"; grep -E "##|rows" $R/gk_$v.txt | cut -c1-110 | head -9; done
# 16-bit NCHW grad_weight at stride 1 through channels_last copies (CONVT_BWD_GW_VIA_CL=all; the rule takes stride > 1
# only): estimated from AE6 (the channels_last kernel's time + two copies at 2.6 TB/s) kb1_65 1.39 -> ~0.99 ms, kb1_69
# 1.85 -> ~1.40, kb1_71 0.98 -> ~0.79, kb1_78 1.92 -> ~1.43, kb1_57 / kb2_10 slower (1.88 -> ~2.6: the copies).
S1=kb1_57,kb1_65,kb1_69,kb1_71,kb1_78,kb2_10
for v in all rule; do CONVT_BWD_GW_VIA_CL=$([ $v = all ] && echo all) PYTHONPATH=$M timeout 120 python -m convt_op bench --configs bfloat16:nchw:grad_weight,bfloat16:nchw:fwdbwd --shapes $S1 --device-time --out $R/via_cl_$v > $R/via_cl_$v.log 2>&1; echo "via_cl $v rc=$? $(( $(date +%s)-S )) s"; done
for v in all rule; do echo "-- via_cl $v"; grep "^| kb" $R/via_cl_$v.log | cut -d'|' -f2,6,7,8,9,10,11,13 | head -12; done
for v in truncate round; do echo "-- bench $v"; grep "^| " $R/b_$v.log | grep -v "^| shape\|^|--" | cut -d'|' -f2,7,8,9,10,11,13,16,17 | head -20; done
# Where cuDNN beats our grad_weight alone by 1.3-2.4x (AE6 / AH1 device ms): kb1_81 channels_last float32 0.319 against
# 0.132, bf16 0.170 against 0.071; kb1_75 bf16 channels_last 0.563 against 0.446. Which kernels run, both sides.
GK2="kb1_81_s5_d2:float32:channels_last:grad_weight kb1_81_s5_d2:bfloat16:channels_last:grad_weight kb1_75_grp_dil_str:bfloat16:channels_last:grad_weight"
PYTHONPATH=$M timeout 60 python scratch/lead/grad_kernels.py $GK2 > $R/gk_losing.txt 2>&1; echo "gk losing rc=$?"; grep -E "##|^ " $R/gk_losing.txt | cut -c1-120 | head -40
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
