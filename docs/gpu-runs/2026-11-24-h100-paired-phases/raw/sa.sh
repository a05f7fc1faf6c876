# Run SA: build wip/gw-nchw-via-cl (a096492, rebased on main); its tests + grad_input via-CL / as_forward / grad_weight tests; kernel_times A/B (knob CONVT_BWD_GW_VIA_CL default vs 0); fp32 NCHW stride-2 forward kernel times (baseline for the ws NCHW epilogue).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="grad_weight_nchw_via or grad_input_nchw_via or as_forward or grad_weight_ws or deterministic"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 170 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
KT="kb2_5_k4_s2:bfloat16:nchw:fwdbwd kb2_93_k4_s2:bfloat16:nchw:fwdbwd kb2_2_s2_op1:bfloat16:nchw:fwdbwd kb2_5_k4_s2:float16:nchw:fwdbwd"
timeout 120 python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1
CONVT_BWD_GW_VIA_CL=0 timeout 120 python scripts/kernel_times.py $KT > $R/kt_knob0.txt 2>&1
for f in kt_default kt_knob0; do echo "== $f"; grep -E "^## " $R/$f.txt | cut -c1-110; done
KF="kb2_2_s2_op1:float32:nchw:fwd kb2_5_k4_s2:float32:nchw:fwd kb2_93_k4_s2:float32:nchw:fwd kb2_2_s2_op1:bfloat16:nchw:fwd"
timeout 80 python scripts/kernel_times.py $KF > $R/kf.txt 2>&1; echo "== kf"; cat $R/kf.txt | cut -c1-140 | head -60
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
