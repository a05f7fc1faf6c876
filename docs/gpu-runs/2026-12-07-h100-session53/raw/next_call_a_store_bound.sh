# For the fifty-fourth session's first device call (issue 5). Before it: `git apply
# docs/gpu-runs/2026-12-07-h100-session53/raw/forward_store_bound.patch` (the store-bound CUDA-core forward,
# forward_store_bound.cu, taken by forward.cu's rule on kb1_81 / kb1_75; knob CONVT_FWD_STORE_BOUND=0 keeps it
# off), and copy this script and ncu_case.py (../../2026-12-07-h100-session50/raw/) to scratch/lead/.
# Measures, in order: the kernel's GPU tests (values in every dtype under the forced path, the rule, the knob);
# the benchmark of kb1_81 / kb1_75 with the rule on and off (TF32 / bf16 / fp16 forward, fp32 and bf16
# training, device times), strict float32 on and off; ncu of the kernel on kb1_81 and kb1_75 (DRAM write rate,
# warps active, issue active, registers); then the forward tests whose kernels it might have displaced.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 150 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "store_bound" > $R/sb_tests.log 2>&1; echo "store_bound tests: $(tail -1 $R/sb_tests.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED\|^E " $R/sb_tests.log | head -8
SH=kb1_81_s5_d2,kb1_75_grp_dil_str
for v in on off; do CONVT_FWD_STORE_BOUND=$([ $v = off ] && echo 0) PYTHONPATH=$M timeout 90 python -m convt_op bench --configs float32:nchw:fwd,bfloat16:nchw:fwd,float16:nchw:fwd,float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd --shapes $SH --device-time --out $R/b_$v > $R/b_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-S )) s"; done
for v in on off; do CONVT_FWD_STORE_BOUND=$([ $v = off ] && echo 0) PYTHONPATH=$M timeout 60 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --shapes $SH --device-time --out $R/bs_$v > $R/bs_$v.log 2>&1; echo "bench strict $v rc=$? $(( $(date +%s)-S )) s"; done
for v in on off; do echo "-- $v"; grep -h "^| kb" $R/b_$v.log $R/bs_$v.log | cut -d"|" -f2,3,4,5,6,7,8,9,10,13,15,16,18; done
MET="gpu__time_duration.sum,dram__bytes_write.sum.per_second,dram__bytes_read.sum.per_second,lts__t_sectors_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,smsp__inst_executed.sum"
PYTHONPATH=$M timeout 60 ncu --clock-control none --profile-from-start off --kernel-name regex:store_bound --metrics "$MET" python scratch/lead/ncu_case.py kb1_81_s5_d2:float32:nchw:fwd kb1_75_grp_dil_str:float32:nchw:fwd kb1_81_s5_d2:bfloat16:nchw:fwd > $R/ncu_sb.txt 2>&1; echo "ncu rc=$?"; grep -E "store_bound_kernel|duration|bytes_write|warps_active|issue_active|registers_per|limit_reg|inst_executed" $R/ncu_sb.txt | awk '{print $1, $(NF)}' | cut -c1-100 | head -40
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 120 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "column_phase or igemm_staged or igemm_direct or test_forward_matches_float64" > $R/fwd_tests.log 2>&1; echo "forward tests: $(tail -1 $R/fwd_tests.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED\|^E " $R/fwd_tests.log | head -8
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
