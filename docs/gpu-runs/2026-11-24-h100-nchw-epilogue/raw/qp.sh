# Run QP: build (NCHW epilogue of the ws forward; plane kernel's padded rule), tests/test_cuda.py whole, memcheck via_cl + plane, NCHW forward bench with the route always / never (fp32, bf16), kernel_times dcgan bf16 training.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 230 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
OUT=$R/san GPU_CHECK_STEPS=memcheck GPU_CHECK_MEMCHECK_K="sanitizer_smoke and (via_cl or s2d)" TIMEOUT_SANITIZER=60 bash scripts/gpu_check.sh > $R/san.txt 2>&1; grep -i "summary\|memcheck " $R/san.txt | tail -3; echo "san $(( $(date +%s)-S )) s"; S=$(date +%s)
SH=kb1_57,kb1_65,kb1_69,kb1_71,kb1_78,kb2_2,kb2_5,kb2_10,kb2_93,unet_up1,dcgan_g4,maskrcnn
CONVT_FWD_VIA_CL=all timeout -s INT 100 python -m convt_op bench --configs float32:nchw:fwd,bfloat16:nchw:fwd --shapes $SH --out $OUT/via_all > $R/bench_all.log 2>&1; echo "bench all rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
CONVT_FWD_VIA_CL=0 timeout -s INT 100 python -m convt_op bench --configs float32:nchw:fwd,bfloat16:nchw:fwd --shapes $SH --out $OUT/via_0 > $R/bench_0.log 2>&1; echo "bench 0 rc=$? $(( $(date +%s)-S )) s"
python scratch/lead/cmp_bench.py $OUT/via_0/results.json $OUT/via_all/results.json
KT="dcgan_g4:bfloat16:nchw:fwdbwd dcgan_g4:float16:nchw:fwdbwd"
timeout 60 python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1; grep -E "^## .*ours|space_to_depth" $R/kt_default.txt | cut -c1-110
cd $OUT && tar czf logs.tgz r && rm -rf r
