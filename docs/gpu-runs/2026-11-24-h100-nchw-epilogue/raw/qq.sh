# Run QQ: build (route forms: NCHW epilogue at stride 1 / small outputs, two copies otherwise; fp32 by rule at stride > 1 in L2), targeted tests, memcheck + racecheck on the via_cl smoke cases, NCHW forward bench default vs route off.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="via_channels_last or tile_kinds or plane_kernel or warp_specialized or sanitizer_smoke or column_phase or wgmma_ws or nchw"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 150 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
OUT=$R/san GPU_CHECK_STEPS=memcheck,racecheck GPU_CHECK_MEMCHECK_K="sanitizer_smoke and (via_cl or s2d or cols_gemm)" GPU_CHECK_RACECHECK_K="sanitizer_smoke and via_cl_ws" TIMEOUT_SANITIZER=80 bash scripts/gpu_check.sh > $R/san.txt 2>&1; grep -i "summary\|memcheck \|racecheck " $R/san.txt | tail -4; echo "san $(( $(date +%s)-S )) s"; S=$(date +%s)
SH=kb1_57,kb1_65,kb1_69,kb1_71,kb1_78,kb2_2,kb2_5,kb2_10,kb2_93,unet_up1,dcgan_g4,maskrcnn
timeout -s INT 100 python -m convt_op bench --configs float32:nchw:fwd,bfloat16:nchw:fwd --shapes $SH --out $OUT/default > $R/bench_default.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
python scratch/lead/cmp_bench.py scratch/lead/qp_via_0.json $OUT/default/results.json
cd $OUT && tar czf logs.tgz r && rm -rf r
