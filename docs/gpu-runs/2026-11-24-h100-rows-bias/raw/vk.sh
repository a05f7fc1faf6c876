# Run VK: grad_bias from the TF32 ring grad_weight kernel (float32 NCHW kb2_10) and from the stride-1 channels_last copy of grad_output (16-bit NCHW kb2_10). Build; fused-bias tests; memcheck / racecheck (san_ring.py); kernel times knob 0 against default; NCHW training benchmarks.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 150 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused" > $R/tests_new.log 2>&1
echo "tests new $(( $(date +%s)-S )) s: $(tail -1 $R/tests_new.log)"; grep FAILED $R/tests_new.log | head; grep -m3 -A40 "^____" $R/tests_new.log | grep -E "^E " | cut -c1-400 | head -12; S=$(date +%s)
for tool in memcheck racecheck; do PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 --print-limit 20 python scratch/lead/san_ring.py > $R/san_$tool.log 2>&1; echo "san $tool rc=$? $(tail -1 $R/san_$tool.log)"; grep -m3 "ERROR SUMMARY\|Error\|hazard" $R/san_$tool.log; grep "rel err" $R/san_$tool.log | head -5; done
echo "san $(( $(date +%s)-S )) s"; S=$(date +%s)
SPECS="kb2_10_k3_p1:float32:nchw:fwdbwd kb2_10_k3_p1:bfloat16:nchw:fwdbwd kb2_10_k3_p1:float16:nchw:fwdbwd"
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 90 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
KT_OURS_ONLY=1 timeout 90 python scripts/kernel_times.py $SPECS > $R/kt_on.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_on; do echo "== $f"; grep -v -i warn $R/$f.txt | cut -c1-130; done; cp $R/kt_*.txt $OUT/; S=$(date +%s)
timeout -s INT 120 python -m convt_op bench --configs float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd --device-time --out $OUT/nchw_training > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A4 "geomean speedup" $OUT/nchw_training/results.md | tail -3
cd $OUT && tar czf logs.tgz r && rm -rf r
