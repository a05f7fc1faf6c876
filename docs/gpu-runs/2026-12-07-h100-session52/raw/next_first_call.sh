# For the fifty-third session's first device call. Before it: `git apply
# docs/gpu-runs/2026-12-07-h100-session52/raw/gw_ws_register_a_rows.patch` (A from registers in the narrow
# warp-specialized grad_weight, one wgmma group per tile row on two sets of a row's fragments; knob
# CONVT_BWD_GW_WS_RA=0 keeps A in shared memory), and copy this script, grad_kernels.py
# (../../2026-11-25-h100-session45/raw/) and ncu_case.py (../../2026-12-07-h100-session50/raw/) to scratch/lead/.
# Measures: the kernel time and bench of A from registers against A from shared memory on the two 32 x 32 shapes
# (AL2's per-step form was 18-19% slower there), ncu of kb1_78 (L1 against the tensor pipe), then the ws / via-CL
# tests with the fresh-process knob runs (RA=0, NARROW=0).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
GK="kb1_71_rect_k3:bfloat16:channels_last:grad_weight kb1_78_pad_k3x7:bfloat16:channels_last:grad_weight"
for v in ra smem; do CONVT_BWD_GW_WS_RA=$([ $v = smem ] && echo 0) KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_$v.txt 2>&1; echo "gk $v rc=$?"; grep -E "ws_kernel" $R/gk_$v.txt | cut -c1-110; done
SH=kb1_71_rect_k3,kb1_78_pad_k3x7
for v in ra smem; do CONVT_BWD_GW_WS_RA=$([ $v = smem ] && echo 0) PYTHONPATH=$M timeout 60 python -m convt_op bench --configs bfloat16:channels_last:grad_weight,bfloat16:channels_last:fwdbwd,bfloat16:nchw:grad_weight,float16:channels_last:grad_weight --shapes $SH --device-time --out $R/b_$v > $R/b_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-S )) s"; done
for v in ra smem; do echo "-- $v"; grep "^| kb" $R/b_$v.log | cut -d"|" -f2,3,5,6,7,8,9,10,11,13,16; done
MET="gpu__time_duration.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
PYTHONPATH=$M timeout 40 ncu --clock-control none --profile-from-start off --kernel-name regex:grad_weight_ws --metrics "$MET" python scratch/lead/ncu_case.py kb1_78_pad_k3x7:bfloat16:channels_last:grad_weight > $R/ncu_ra.txt 2>&1; echo "ncu ra rc=$? $(grep -E 'duration|l1tex__t|pipe_tensor' $R/ncu_ra.txt | awk '{print $NF}' | tr '\n' ' ')"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 200 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "test_grad_weight_warp_specialized or test_grad_weight_nchw_via_channels_last" > $R/ws.log 2>&1; echo "ws tests: $(tail -1 $R/ws.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED\|^E " $R/ws.log | head -8
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
