# Run VI: branch wip/rows-bias (fdc5c27): the third form of the rows kernel's grad_bias sums. Build; all fused-bias tests; memcheck / racecheck; kernel times knob 0 against default; ncu of the summing kernel; float32 NCHW training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 120 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused" > $R/tests_new.log 2>&1
echo "tests new $(( $(date +%s)-S )) s: $(tail -1 $R/tests_new.log)"; grep FAILED $R/tests_new.log | head; grep -m3 -A40 "^____" $R/tests_new.log | grep -E "^E " | cut -c1-300 | head -12; S=$(date +%s)
SPECS="kb2_2_s2_op1:float32:nchw:fwdbwd"
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
KT_OURS_ONLY=1 timeout 60 python scripts/kernel_times.py $SPECS > $R/kt_on.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_on; do echo "== $f"; cat $R/$f.txt | cut -c1-120; done; cp $R/kt_*.txt $OUT/; S=$(date +%s)
for tool in memcheck racecheck; do PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 compute-sanitizer --tool $tool --error-exitcode 3 --print-limit 20 python scratch/lead/san_rows.py > $R/san_$tool.log 2>&1; echo "san $tool rc=$? $(tail -1 $R/san_$tool.log)"; grep -m3 "ERROR SUMMARY\|Error\|hazard\|rel err" $R/san_$tool.log; done
echo "san $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 70 python -m convt_op bench --configs float32:nchw:fwdbwd --device-time --out $OUT/nchw_training > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/nchw_training/results.md | tail -2; S=$(date +%s)
M=gpu__time_duration.sum,sm__inst_executed.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_local_ld.sum,smsp__inst_executed_op_local_st.sum,launch__registers_per_thread,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active
timeout 90 ncu --clock-control none --kernel-name regex:grad_weight_rows_async --launch-skip 3 --launch-count 1 --metrics $M python scratch/lead/ncu_rows.py > $R/ncu_fused1.txt 2>&1; echo "ncu rc=$? $(( $(date +%s)-S )) s"; cp $R/ncu_fused1.txt $OUT/
grep -E "grad_weight_rows_async|gpu__time|inst_executed|registers|stalled|issue_active" $R/ncu_fused1.txt | sed 's/  */ /g' | cut -c1-150
cd $OUT && tar czf logs.tgz r && rm -rf r
