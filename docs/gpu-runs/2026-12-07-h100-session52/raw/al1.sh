# For the fifty-second session's first device call. Before it: `git apply
# docs/gpu-runs/2026-12-07-h100-session51/raw/gw_ws_narrow_co.patch` (32-channel co tiles, m64n32 products, in the
# warp-specialized grad_weight where Cout <= 32; knob CONVT_BWD_GW_WS_NARROW=0 keeps the wide tiles), and copy this
# script, grad_kernels.py (../../2026-11-25-h100-session45/raw/) and ncu_case.py (../../2026-12-07-h100-session50/raw/)
# to scratch/lead/.
# Measures: the ws kernel's tests (4 new narrow cases, the co width checked in the kernel name, the fresh-process
# wide-knob run), the narrow kernel against the wide one on the two 32 x 32 suite shapes (bf16 channels_last
# grad_weight alone and training; NCHW through the copies by cdf8544's rule), kernel times; then tests/test_cuda.py
# whole in 12 shards (the last whole run was AJ3, on 89fde13).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 150 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "test_grad_weight_warp_specialized or test_grad_weight_nchw_via_channels_last" > $R/ws.log 2>&1; echo "ws tests: $(tail -1 $R/ws.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED\|^E " $R/ws.log | head -8
S2=kb1_71_rect_k3,kb1_78_pad_k3x7
for v in narrow wide; do CONVT_BWD_GW_WS_NARROW=$([ $v = wide ] && echo 0) PYTHONPATH=$M timeout 90 python -m convt_op bench --configs bfloat16:channels_last:grad_weight,bfloat16:channels_last:fwdbwd,bfloat16:nchw:grad_weight,bfloat16:nchw:fwdbwd,float16:channels_last:grad_weight --shapes $S2 --device-time --out $R/b_$v > $R/b_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-S )) s"; done
for v in narrow wide; do echo "-- $v"; grep "^| kb" $R/b_$v.log | cut -d'|' -f2,3,5,6,7,8,9,10,11,13,16; done
GK="kb1_71_rect_k3:bfloat16:channels_last:grad_weight kb1_78_pad_k3x7:bfloat16:channels_last:grad_weight"
for v in narrow wide; do CONVT_BWD_GW_WS_NARROW=$([ $v = wide ] && echo 0) KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_$v.txt 2>&1; echo "gk $v rc=$?"; grep -E "##|ws_kernel" $R/gk_$v.txt | cut -c1-120; done
# Is the narrow kernel bound by shared memory as counted (perf notes v51, Next 1: ~24 cycles a product)? L1 and tensor
# pipe of kb1_78's ws kernel, narrow then wide (ncu_case.py from ../../2026-12-07-h100-session50/raw/).
MET="gpu__time_duration.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
for v in narrow wide; do CONVT_BWD_GW_WS_NARROW=$([ $v = wide ] && echo 0) PYTHONPATH=$M timeout 60 ncu --clock-control none --profile-from-start off --kernel-name regex:grad_weight_ws --metrics "$MET" python scratch/lead/ncu_case.py kb1_78_pad_k3x7:bfloat16:channels_last:grad_weight > $R/ncu_$v.txt 2>&1; echo "ncu $v rc=$?"; grep -E "duration|l1tex__t|pipe_tensor" $R/ncu_$v.txt | awk '{$1=$1}1' | cut -c1-100; done
left=$(( 560 - ($(date +%s)-S) ))
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout $left python -m pytest tests/test_cuda.py -q -p no:cacheprovider --shard $k/12 > $R/tc_$k.log 2>&1 & done; wait
for k in $(seq 0 11); do echo "shard $k: $(tail -1 $R/tc_$k.log)"; done; grep -h "^FAILED" $R/tc_*.log | head -20
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
