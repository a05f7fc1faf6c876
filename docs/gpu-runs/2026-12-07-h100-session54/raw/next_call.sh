# For the next session's first device call (issues 5 and 6). Before it, from the repository root:
#   git apply docs/gpu-runs/2026-12-07-h100-session54/raw/store_bound_v2.patch
#   git apply docs/gpu-runs/2026-12-07-h100-session54/raw/grad_input_narrow.patch
#   git apply docs/gpu-runs/2026-12-07-h100-session52/raw/gw_ws_register_a_rows.patch
# and copy this script, ../../2026-12-07-h100-session50/raw/ncu_case.py and
# ../../2026-11-25-h100-session45/raw/grad_kernels.py to scratch/lead/ (carry scratch/lead).
# Runs: build; the store-bound forward v2 against CONVT_FWD_STORE_BOUND=0 (bench + ncu); the narrow-group grad_input
# against CONVT_BWD_GI=native (bench + ncu); A from registers in the ws grad_weight against CONVT_BWD_GW_WS_RA=0
# (kernel times + bench); then the whole tests/test_cuda.py in 12 shards until DEADLINE (default 500 s).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
SH=kb1_81_s5_d2,kb1_75_grp_dil_str
for v in on off; do CONVT_FWD_STORE_BOUND=$([ $v = off ] && echo 0) PYTHONPATH=$M timeout 60 python -m convt_op bench --configs float32:nchw:fwd,bfloat16:nchw:fwd --shapes $SH --device-time --out $R/b_$v > $R/b_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-S )) s"; done
for v in on off; do echo "-- $v"; grep -h "^| kb" $R/b_$v.log | cut -d"|" -f2,3,4,5,6,9,10,13,14,16; done
MET="gpu__time_duration.sum,dram__bytes_write.sum.per_second,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,smsp__inst_executed.sum"
PYTHONPATH=$M timeout 50 ncu --clock-control none --profile-from-start off --kernel-name regex:store_bound --metrics "$MET" python scratch/lead/ncu_case.py kb1_81_s5_d2:float32:nchw:fwd kb1_75_grp_dil_str:float32:nchw:fwd kb1_81_s5_d2:bfloat16:nchw:fwd > $R/ncu_sb.txt 2>&1; echo "ncu rc=$?"; grep -E "duration|bytes_write|warps_active|issue_active|registers_per|inst_executed|stalled" $R/ncu_sb.txt | awk '{print $1, $(NF)}' | cut -c1-100
# grad_input for narrow groups (backward_grad_input_narrow.cu) on kb1_75 / kb1_81 against CONVT_BWD_GI=native
SH=kb1_75_grp_dil_str,kb1_81_s5_d2
for v in on off; do CONVT_BWD_GI=$([ $v = off ] && echo native) PYTHONPATH=$M timeout 70 python -m convt_op bench --configs float32:nchw:grad_input,float32:channels_last:grad_input,bfloat16:nchw:grad_input,bfloat16:channels_last:grad_input,float32:nchw:fwdbwd,bfloat16:channels_last:fwdbwd --shapes $SH --device-time --out $R/n_$v > $R/n_$v.log 2>&1; echo "bench gi $v rc=$? $(( $(date +%s)-S )) s"; done
for v in on off; do echo "-- gi $v"; grep -h "^| kb" $R/n_$v.log | cut -d"|" -f2,3,4,5,6,9,10,13,14,16; done
PYTHONPATH=$M timeout 40 ncu --clock-control none --profile-from-start off --kernel-name regex:grad_input_narrow --metrics "$MET" python scratch/lead/ncu_case.py kb1_75_grp_dil_str:float32:nchw:grad_input kb1_75_grp_dil_str:float32:channels_last:grad_input > $R/ncu_gi.txt 2>&1; echo "ncu gi rc=$?"; grep -E "duration|bytes_write|warps_active|issue_active|registers_per|inst_executed" $R/ncu_gi.txt | awk '{print $1, $(NF)}' | cut -c1-100
GK="kb1_71_rect_k3:bfloat16:channels_last:grad_weight kb1_78_pad_k3x7:bfloat16:channels_last:grad_weight"
for v in ra smem; do CONVT_BWD_GW_WS_RA=$([ $v = smem ] && echo 0) KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_$v.txt 2>&1; echo "gk $v rc=$?"; grep -E "ws_kernel" $R/gk_$v.txt | cut -c1-110; done
SH=kb1_71_rect_k3,kb1_78_pad_k3x7
for v in ra smem; do CONVT_BWD_GW_WS_RA=$([ $v = smem ] && echo 0) PYTHONPATH=$M timeout 60 python -m convt_op bench --configs bfloat16:channels_last:grad_weight,bfloat16:channels_last:fwdbwd,bfloat16:nchw:grad_weight,float16:channels_last:grad_weight --shapes $SH --device-time --out $R/g_$v > $R/g_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-S )) s"; done
for v in ra smem; do echo "-- $v"; grep "^| kb" $R/g_$v.log | cut -d"|" -f2,3,5,6,9,10,13,16; done
left=$(( ${DEADLINE:-500} - ($(date +%s)-S) )); echo "whole test_cuda.py in 12 shards, ${left} s left"
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout $left python -m pytest tests/test_cuda.py -q -p no:cacheprovider --shard $k/12 > $R/tc_$k.log 2>&1 & done; wait
for k in $(seq 0 11); do echo "shard $k: $(tail -1 $R/tc_$k.log)"; done; grep -h "^FAILED" $R/tc_*.log | head -20
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
