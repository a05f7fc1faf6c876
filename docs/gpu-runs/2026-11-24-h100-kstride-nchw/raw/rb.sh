# Run RB: build ad0d837 (layout copy loads in flight, float32 grad_input via residues for k = 2s, kernel == stride NCHW epilogue); targeted tests; memcheck; kernel_times A/B.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="kernel_equals_stride or via_channels_last or grad_input_nchw_via or as_forward_default or channels_last_gemm or channels_last_operands"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 170 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
timeout 100 compute-sanitizer --tool memcheck python scratch/lead/ks_nchw_smoke.py > $R/san.txt 2>&1; echo "memcheck rc=$? $(( $(date +%s)-S )) s"; tail -3 $R/san.txt
S=$(date +%s)
KF="maskrcnn_mask:float32:nchw:fwd maskrcnn_mask:bfloat16:nchw:fwd"
timeout 60 python scripts/kernel_times.py $KF > $R/kf_default.txt 2>&1
CONVT_FWD_KSTRIDE=cl timeout 60 python scripts/kernel_times.py $KF > $R/kf_cl.txt 2>&1
CONVT_FWD_VIA_CL=0 timeout 60 python scripts/kernel_times.py $KF > $R/kf_novia.txt 2>&1
for f in kf_default kf_cl kf_novia; do echo "== $f"; grep -E "^## " $R/$f.txt | cut -c1-110; done
KT="maskrcnn_mask:float32:nchw:fwdbwd kb2_93_k4_s2:float32:nchw:fwdbwd kb2_5_k4_s2:float32:nchw:fwdbwd kb2_2_s2_op1:float32:nchw:fwdbwd kb2_5_k4_s2:bfloat16:nchw:fwdbwd kb2_93_k4_s2:bfloat16:nchw:fwdbwd maskrcnn_mask:bfloat16:nchw:fwdbwd"
timeout 150 python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1
echo "== kt_default"; grep -E "^## " $R/kt_default.txt | cut -c1-110; grep -h "_vec_kernel" $R/kt_default.txt | cut -c1-100
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
