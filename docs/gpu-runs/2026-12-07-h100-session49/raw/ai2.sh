# Call AI2: the channels_last rows grad_weight with 8 / 16-byte fragment loads (kWide, default) against the 4-byte
# ones (CONVT_BWD_GW_ROWS_CL_WIDE=0): bit-identity across the knob, the kernel's tests, grad_weight alone on the 7
# shapes it runs, per-kernel device times, ncu stall reasons on kb1_57 both ways.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
CONVT_BWD_GW_ROWS_CL_WIDE=0 PYTHONPATH=$M timeout 60 python scratch/lead/wide_ab.py $R/narrow.pt > $R/ab.log 2>&1; echo "narrow rc=$?"
PYTHONPATH=$M timeout 60 python scratch/lead/wide_ab.py $R/wide.pt $R/narrow.pt >> $R/ab.log 2>&1; echo "wide rc=$?"; cat $R/ab.log | tail -4; rm -f $R/*.pt
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 150 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "rows_channels_last or float32_channels_last_residues or test_grad_weight_wgmma_tf32 or bias_fused_rows" > $R/tests_new.log 2>&1; echo "tests rc=$? $(tail -1 $R/tests_new.log) $(( $(date +%s)-S )) s"
grep -h "^FAILED" $R/tests_new.log | head -8
SH=kb1_57,kb1_65,kb1_69,kb2_2,kb2_5,kb2_10,kb2_93
PYTHONPATH=$M timeout 100 python -m convt_op bench --configs float32:channels_last:grad_weight --shapes $SH --device-time --out $R/wide > $R/wide.log 2>&1; echo "bench wide rc=$? $(( $(date +%s)-S )) s"
CONVT_BWD_GW_ROWS_CL_WIDE=0 PYTHONPATH=$M timeout 100 python -m convt_op bench --configs float32:channels_last:grad_weight --shapes $SH --device-time --out $R/narrow > $R/narrow.log 2>&1; echo "bench narrow rc=$? $(( $(date +%s)-S )) s"
GK="kb1_57_square:float32:channels_last:grad_weight kb2_10_k3_p1:float32:channels_last:grad_weight kb1_69_k3x5:float32:channels_last:grad_weight kb2_2_s2_op1:float32:channels_last:grad_weight"
KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_wide.txt 2>&1; echo "gk rc=$?"
CONVT_BWD_GW_ROWS_CL_WIDE=0 KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_narrow.txt 2>&1; echo "gk rc=$? $(( $(date +%s)-S )) s"
MET="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__cycles_active.avg"
for v in 1 0; do left=$(( 560 - ($(date +%s)-S) )); [ $left -lt 30 ] && break
  CONVT_BWD_GW_ROWS_CL_WIDE=$v PYTHONPATH=$M timeout $left ncu --clock-control none -k regex:grad_weight_rows_cl --launch-skip 1 --launch-count 1 --metrics "$MET" python scratch/lead/ncu_gw.py kb1_57_square > $R/ncu_kb1_57_wide$v.txt 2>&1; echo "ncu wide=$v rc=$? $(( $(date +%s)-S )) s"; done
for f in gk_wide gk_narrow; do echo "-- $f"; grep -E "##|rows_cl" $R/$f.txt | head -12; done
for v in wide narrow; do echo "-- bench $v"; grep "^| kb" $R/$v.log | cut -d'|' -f2,4,6,9,10,11,13; done
for v in 1 0; do echo "-- ncu wide=$v"; grep -E "stalled|inst_executed|hmma|wavefronts|cycles_active" $R/ncu_kb1_57_wide$v.txt | awk '{print $1, $NF}' | sort -k2 -g -r | head -14; done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
