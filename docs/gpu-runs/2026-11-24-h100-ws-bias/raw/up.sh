# Run UP: diagnose the ws kernel's slowdown with the bias warps summing (CONVT_GW_WS_BIAS_EXP: 0 full, 1 wait/arrive only, 2 no shared loads), against CONVT_BWD_BIAS_FUSED=0; the ws bias test with inputs >= 24 wide.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused_ws" > $R/tests_ws_bias.log 2>&1
echo "tests ws bias $(( $(date +%s)-S )) s: $(tail -1 $R/tests_ws_bias.log)"; grep FAILED $R/tests_ws_bias.log | head; grep -m3 -A30 "^____" $R/tests_ws_bias.log | grep -E "^E " | cut -c1-300 | head -12; S=$(date +%s)
SPECS=""; for r in kb2_2_s2_op1 kb2_5_k4_s2 kb2_10_k3_p1 kb2_93_k4_s2; do SPECS="$SPECS $r:bfloat16:channels_last:fwdbwd"; done
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
for e in 0 1 2; do CONVT_GW_WS_BIAS_EXP=$e KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_exp$e.txt 2>&1; done
echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_exp0 kt_exp1 kt_exp2; do echo "== $f"; grep -h "^## \|grad_weight_ws" $R/$f.txt | cut -c1-100; done
cd $OUT && tar czf logs.tgz r && rm -rf r
