# Call AI1: verify 0f06067 on the GPU: tests/test_cuda.py whole in 12 shards, then memcheck + racecheck of the
# channels_last rows grad_weight on small cases (the filter flag is tried as --kernel-name kns=, then --filter kns=).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 60 python scratch/lead/rows_cl_smoke.py > $R/smoke.log 2>&1; echo "smoke rc=$? $(tail -1 $R/smoke.log)"
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 200 python -m pytest tests/test_cuda.py -q -p no:cacheprovider --shard $k/12 > $R/tc_$k.log 2>&1 & done; wait
for k in $(seq 0 11); do echo "shard $k: $(tail -1 $R/tc_$k.log)"; done; grep -h "^FAILED" $R/tc_*.log | head -20
echo "test_cuda done $(( $(date +%s)-S )) s"
for t in memcheck racecheck; do left=$(( 560 - ($(date +%s)-S) )); [ $left -lt 20 ] && break
  PYTHONPATH=$M timeout $left compute-sanitizer --tool $t --kernel-name kns=grad_weight_rows_cl python scratch/lead/rows_cl_smoke.py > $R/$t.log 2>&1; echo "$t rc=$? $(( $(date +%s)-S )) s"
  if ! grep -q "SUMMARY" $R/$t.log; then head -5 $R/$t.log; left=$(( 560 - ($(date +%s)-S) )); [ $left -lt 20 ] && break
    PYTHONPATH=$M timeout $left compute-sanitizer --tool $t --filter kns=grad_weight_rows_cl python scratch/lead/rows_cl_smoke.py > $R/$t.log 2>&1; echo "$t (--filter) rc=$? $(( $(date +%s)-S )) s"; fi
  grep -E "SUMMARY|smoke ok|HAZARD" $R/$t.log | tail -3; done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
