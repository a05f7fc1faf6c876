# Run SB: build main + paired column phases (ws kernel's NCHW output at SW == 2, forward.cu route); targeted tests; kernel_times A/B (CONVT_FWD_WS_PAIR default vs 0); memcheck on a paired smoke.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="via_channels_last or grad_weight_nchw_via or ws_tf32 or wgmma_ws or column_phase"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
timeout 100 compute-sanitizer --tool memcheck python scratch/lead/pair_smoke.py > $R/san.txt 2>&1; echo "memcheck rc=$? $(( $(date +%s)-S )) s"; tail -3 $R/san.txt
S=$(date +%s)
KF="kb2_2_s2_op1:float32:nchw:fwd kb2_5_k4_s2:float32:nchw:fwd kb2_93_k4_s2:float32:nchw:fwd dcgan_g4:float32:nchw:fwd kb2_2_s2_op1:bfloat16:nchw:fwd kb2_5_k4_s2:bfloat16:nchw:fwd kb2_93_k4_s2:bfloat16:nchw:fwd dcgan_g4:bfloat16:nchw:fwd"
timeout 120 python scripts/kernel_times.py $KF > $R/kf_pair.txt 2>&1
CONVT_FWD_WS_PAIR=0 timeout 120 python scripts/kernel_times.py $KF > $R/kf_nopair.txt 2>&1
for f in kf_pair kf_nopair; do echo "== $f"; grep -E "^## .*ours" $R/$f.txt | cut -c1-110; done
echo "== kernels (paired)"; grep -A3 "^## .*ours" $R/kf_pair.txt | grep -v "^--" | cut -c1-120
KT="kb2_2_s2_op1:float32:nchw:fwdbwd kb2_5_k4_s2:float32:nchw:fwdbwd kb2_93_k4_s2:float32:nchw:fwdbwd kb2_2_s2_op1:bfloat16:nchw:fwdbwd kb2_93_k4_s2:bfloat16:nchw:fwdbwd"
timeout 150 python scripts/kernel_times.py $KT > $R/kt_pair.txt 2>&1; echo "== kt_pair"; grep -E "^## " $R/kt_pair.txt | cut -c1-110
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
