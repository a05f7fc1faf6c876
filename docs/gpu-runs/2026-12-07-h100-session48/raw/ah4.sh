# Call AH4 (last of the session's device time): memcheck + racecheck of the channels_last rows grad_weight on small
# cases; ncu of it on kb1_57 (stride 1, MMA-bound?) and kb2_2 (stride 2, bytes-bound?).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 60 python scratch/lead/rows_cl_smoke.py > $R/smoke.log 2>&1; echo "smoke rc=$? $(tail -1 $R/smoke.log)"
PYTHONPATH=$M timeout 100 compute-sanitizer --tool memcheck --kernel-name regex:grad_weight_rows_cl python scratch/lead/rows_cl_smoke.py > $R/memcheck.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|smoke ok' $R/memcheck.log | tr '\n' ' ') $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 100 compute-sanitizer --tool racecheck --kernel-name regex:grad_weight_rows_cl python scratch/lead/rows_cl_smoke.py > $R/racecheck.log 2>&1; echo "racecheck rc=$? $(grep -E 'HAZARD|RACECHECK SUMMARY|smoke ok' $R/racecheck.log | tail -3 | tr '\n' ' ') $(( $(date +%s)-S )) s"
for sh in kb1_57_square kb2_2_s2_op1; do PYTHONPATH=$M timeout 80 ncu --clock-control none -k regex:grad_weight_rows_cl --launch-skip 1 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy python scratch/lead/ncu_gw.py $sh > $R/ncu_$sh.txt 2>&1; echo "ncu $sh rc=$? $(( $(date +%s)-S )) s"; done
for sh in kb1_57_square kb2_2_s2_op1; do echo "== $sh"; grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Executed Ipc A|Issue Slots Busy|Shared Memory|Bank|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall|pipe" $R/ncu_$sh.txt | head -40; done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
