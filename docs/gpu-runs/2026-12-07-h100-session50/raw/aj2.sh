# Call AJ2: the channels_last rows grad_weight with TF32 by the MMA's own truncation (CONVT_BWD_GW_ROWS_CL_TF32=truncate,
# tf32_truncate.patch applied from scratch/lead/trunc/) against the default rounding adds: float64 errors and
# bit-identity of the default path (trunc_ab.py), the kernel's tests both ways, per-kernel device times, grad_weight
# alone on the 7 shapes, ncu on kb1_57 truncated.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
cp scratch/lead/trunc/* csrc/cuda/
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 60 python scratch/lead/trunc_ab.py $R/round.pt > $R/ab.log 2>&1; echo "round rc=$?"
CONVT_BWD_GW_ROWS_CL_TF32=truncate PYTHONPATH=$M timeout 60 python scratch/lead/trunc_ab.py $R/trunc.pt $R/round.pt >> $R/ab.log 2>&1; echo "trunc rc=$?"; cat $R/ab.log | tail -4; rm -f $R/*.pt
for v in round truncate; do CONVT_BWD_GW_ROWS_CL_TF32=$v PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 100 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "rows_channels_last or float32_channels_last_residues or bias_fused_rows" > $R/tests_$v.log 2>&1; echo "tests $v rc=$? $(tail -1 $R/tests_$v.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED" $R/tests_$v.log | head -5; done
GK="kb1_57_square:float32:channels_last:grad_weight kb2_10_k3_p1:float32:channels_last:grad_weight kb1_69_k3x5:float32:channels_last:grad_weight kb1_65_k3x7:float32:channels_last:grad_weight kb2_2_s2_op1:float32:channels_last:grad_weight"
for v in round truncate; do CONVT_BWD_GW_ROWS_CL_TF32=$v KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_$v.txt 2>&1; echo "gk $v rc=$? $(( $(date +%s)-S )) s"; done
SH=kb1_57,kb1_65,kb1_69,kb2_2,kb2_5,kb2_10,kb2_93
for v in truncate round; do CONVT_BWD_GW_ROWS_CL_TF32=$v PYTHONPATH=$M timeout 100 python -m convt_op bench --configs float32:channels_last:grad_weight --shapes $SH --device-time --out $R/b_$v > $R/b_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-S )) s"; done
MET="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__cycles_active.avg"
left=$(( 560 - ($(date +%s)-S) )); [ $left -gt 40 ] && { CONVT_BWD_GW_ROWS_CL_TF32=truncate PYTHONPATH=$M timeout $left ncu --clock-control none -k regex:grad_weight_rows_cl --launch-skip 1 --launch-count 1 --metrics "$MET" python scratch/lead/ncu_gw.py kb1_57_square > $R/ncu_kb1_57_trunc.txt 2>&1; echo "ncu rc=$? $(( $(date +%s)-S )) s"; }
for f in gk_round gk_truncate; do echo "-- $f"; grep -E "##|rows_cl" $R/$f.txt | cut -c1-100 | head -12; done
for v in truncate round; do echo "-- bench $v"; grep "^| kb" $R/b_$v.log | cut -d'|' -f2,4,6,9,10,11,13,16,17; done
echo "-- ncu trunc"; grep -E "stalled|inst_executed|hmma|wavefronts|cycles_active" $R/ncu_kb1_57_trunc.txt | awk '{print $1, $NF}' | sort -k2 -g -r | head -14
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
