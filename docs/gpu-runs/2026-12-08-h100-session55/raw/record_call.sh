# Benchmark of record on the tree as sent (issues 5 and 6): --configs record with device and host times, then each
# backward kernel alone (--configs kernels) while time is left. Knobs for patches that lost go in front of the call.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S0=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S0 )) s"
env | grep ^CONVT_ > $R/knobs.txt; cat $R/knobs.txt
PYTHONPATH=$M timeout $((585-$(date +%s)+S0)) python -m convt_op bench --configs record --device-time --host-time --out $R/record > $R/record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S0 )) s"
grep -B2 -A16 "geomean" $R/record/results.md | head -40
E=$(( $(date +%s)-S0 )); echo "kernels from $E s"
if [ $E -lt 420 ]; then PYTHONPATH=$M timeout $((585-E)) python -m convt_op bench --configs kernels --device-time --out $R/kernels > $R/kernels.log 2>&1; echo "kernels rc=$? $(( $(date +%s)-S0 )) s"; grep -A10 "geomean" $R/kernels/results.md | head -14; fi
cd $OUT && tar czf r.tgz r && rm -rf r
