# Run UR: grad_bias in the ws grad_weight kernel by m64n8k16 wgmma (A = the boxes, B = ones) in both consumers, halo parts by consumer 0. Build; the ws bias tests; kernel times CONVT_BWD_BIAS_FUSED=0 against default; the bias / ws / channels_last tests in 4 shards.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias_fused_ws" > $R/tests_ws_bias.log 2>&1
echo "tests ws bias $(( $(date +%s)-S )) s: $(tail -1 $R/tests_ws_bias.log)"; grep FAILED $R/tests_ws_bias.log | head; grep -m3 -A30 "^____" $R/tests_ws_bias.log | grep -E "^E " | cut -c1-300 | head -12; S=$(date +%s)
SPECS=""; for r in kb2_2_s2_op1 kb2_5_k4_s2 kb2_10_k3_p1 kb2_93_k4_s2; do SPECS="$SPECS $r:bfloat16:channels_last:fwdbwd"; done; SPECS="$SPECS kb2_5_k4_s2:float16:channels_last:fwdbwd kb2_10_k3_p1:float16:channels_last:fwdbwd"
CONVT_BWD_BIAS_FUSED=0 KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_off.txt 2>&1
KT_OURS_ONLY=1 timeout 100 python scripts/kernel_times.py $SPECS > $R/kt_on.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; for f in kt_off kt_on; do echo "== $f"; grep -h "^## \|grad_weight_ws\|grad_bias" $R/$f.txt | cut -c1-100; done; S=$(date +%s)
for j in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 170 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "bias or warp_specialized or wgmma_channels_last or nchw_via_channels_last or sanitizer_smoke or channels_last_weight" --shard $j/4 > $R/tests_$j.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for j in 0 1 2 3; do echo "shard $j: $(tail -1 $R/tests_$j.log)"; grep FAILED $R/tests_$j.log | head -5; done
cd $OUT && tar czf logs.tgz r && rm -rf r
