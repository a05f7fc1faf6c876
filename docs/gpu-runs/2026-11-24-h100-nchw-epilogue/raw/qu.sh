# Run QU: build (NCHW grad_input via channels_last residues), targeted tests, memcheck of the new path, kernel_times A/B.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="via_channels_last or block_rule or grad_input or as_forward or residue or planes or column_phase or backward_columns or sanitizer_smoke"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 170 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
CONVT_BWD_GI=forward timeout 120 compute-sanitizer --tool memcheck python scratch/lead/gi_via_cl_smoke.py > $R/san_gi.txt 2>&1; echo "memcheck rc=$?"; tail -4 $R/san_gi.txt
CONVT_BWD_GI=forward timeout 120 compute-sanitizer --tool racecheck python scratch/lead/gi_via_cl_smoke.py > $R/race_gi.txt 2>&1; echo "racecheck rc=$?"; tail -2 $R/race_gi.txt; echo "san $(( $(date +%s)-S )) s"; S=$(date +%s)
KT="kb2_93_k4_s2:bfloat16:nchw:fwdbwd kb2_2_s2_op1:bfloat16:nchw:fwdbwd kb2_5_k4_s2:bfloat16:nchw:fwdbwd kb2_93_k4_s2:float16:nchw:fwdbwd"
timeout 100 python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1
CONVT_BWD_GI_VIA_CL=0 timeout 100 python scripts/kernel_times.py $KT > $R/kt_off.txt 2>&1
for f in kt_default kt_off; do echo "== $f"; grep -E "^## .*ours" $R/$f.txt | cut -c1-110; done
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
