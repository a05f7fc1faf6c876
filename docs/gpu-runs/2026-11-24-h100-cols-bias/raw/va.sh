# Run VA: branch wip/cols-cl-bias (12c5f53, on main ccc367c = 0b5d60e + e6cb136 not yet run on a GPU): build; tests/test_cuda.py whole (12 shards); kernel times CONVT_BWD_BIAS_FUSED=0 against default (channels_last rows whose columns copy now sums grad_bias); bf16 / fp16 channels_last training benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 120 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused_columns_cl or bias_fused_ws" > $R/tests_new.log 2>&1
echo "tests new $(( $(date +%s)-S )) s: $(tail -1 $R/tests_new.log)"; grep FAILED $R/tests_new.log | head; grep -m3 -A30 "^____" $R/tests_new.log | grep -E "^E " | cut -c1-300 | head -12; S=$(date +%s)
SPECS=""; for c in bfloat16:channels_last:fwdbwd float32:channels_last:fwdbwd; do for r in unet_up1 maskrcnn_mask unet_up4 dcgan_g2 dcgan_g4; do SPECS="$SPECS $r:$c"; done; done
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_on.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_on; do echo "== $f"; grep -h "^## \|im2col\|grad_bias\|total" $R/$f.txt | cut -c1-110; done; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 300 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
timeout -s INT 80 python -m convt_op bench --configs bfloat16:channels_last:fwdbwd,float16:channels_last:fwdbwd --device-time --out $OUT/cl_training > $R/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A4 "geomean speedup" $OUT/cl_training/results.md | tail -3
cd $OUT && tar czf logs.tgz r && cp r/kt_*.txt . && rm -rf r
