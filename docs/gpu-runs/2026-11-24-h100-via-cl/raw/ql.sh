# Run QL: space_to_depth_plane_kernel (NCHW columns per grad_output plane). Build, targeted tests, kernel_times with the knob, the NCHW training rows.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 190 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-200 | head -20
S=$(date +%s)
OUT=$R/san GPU_CHECK_STEPS=memcheck GPU_CHECK_MEMCHECK_K="sanitizer_smoke and (cols_gemm or s2d or gw_rows or narrow or grouped)" TIMEOUT_SANITIZER=60 bash scripts/gpu_check.sh > $R/san.txt 2>&1; grep -i "summary\|memcheck " $R/san.txt | tail -3
KT="dcgan_g4:bfloat16:nchw:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd dcgan_g2:float32:nchw:fwdbwd"
python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1
CONVT_S2D_PLANE=0 python scripts/kernel_times.py $KT > $R/kt_off.txt 2>&1
KA="maskrcnn_mask:bfloat16:nchw:fwdbwd unet_up4:bfloat16:nchw:fwdbwd maskrcnn_mask:float32:nchw:fwdbwd kb1_75_grp_dil_str:float16:channels_last:fwd kb1_75_grp_dil_str:bfloat16:channels_last:fwdbwd"
python scripts/kernel_times.py $KA > $R/kta_default.txt 2>&1
CONVT_S2D_PLANE=all python scripts/kernel_times.py $KA > $R/kta_all.txt 2>&1
for f in kt_default kt_off kta_default kta_all; do echo "== $f"; grep -E "^## .*ours|space_to_depth|igemm|nhwc_to" $R/$f.txt | cut -c1-110; done
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 150 python -m convt_op bench --configs float32:nchw:fwdbwd,bfloat16:nchw:fwdbwd,float16:channels_last:fwd,bfloat16:channels_last:fwd --out $OUT/train > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A7 "geomean speedup" $OUT/train/results.md | head -5; grep "dcgan\|kb1_75" $OUT/train/results.md | cut -d'|' -f2-10
cd $OUT && tar czf logs.tgz r && rm -rf r
