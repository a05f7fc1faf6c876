# Run TQ (next session): branch wip/strict-3xtf32-rows-rule: strict 3xTF32 by Cout*KH*KW >= 512, weight split once, vector split kernel: kernel times (=0 against the rule), whole tests/test_cuda.py, strict benchmark.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="unet_up4:float32strict:nchw:fwd maskrcnn_mask:float32strict:nchw:fwd unet_up1:float32strict:nchw:fwd dcgan_g4:float32strict:nchw:fwd dcgan_g2:float32strict:nchw:fwd unet_up4:float32strict:channels_last:fwd"
export KT_OURS_ONLY=1
CONVT_GEMM_3XTF32=0 timeout 40 python scripts/kernel_times.py $ROWS > $R/kt_full.txt 2>&1
timeout 40 python scripts/kernel_times.py $ROWS > $R/kt_3x.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
paste <(grep "^## " $R/kt_full.txt | sed 's/## //; s/ ours: wall [0-9]* us\/step, device / /; s/ us\/step//') <(grep "^## " $R/kt_3x.txt | sed 's/.*device //; s/ us\/step//') | awk '{printf "%-42s fp32 %7s 3xtf32 %7s  %.3f\n", $1, $2, $3, $3/$2}'
grep -h -A5 "## unet_up4:float32strict:nchw" $R/kt_3x.txt | cut -c1-110
unset KT_OURS_ONLY
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 230 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_cuda_$k.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_cuda_$k.log; grep FAILED $R/test_cuda_$k.log; done; S=$(date +%s)
(cd $OUT && tar czf logs.tgz r)
timeout -s INT 40 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/strict > $R/bench_strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/strict/results.md | tail -1
TR="dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd dcgan_g2:float32:nchw:fwdbwd"
timeout 45 python scripts/kernel_times.py $TR > $R/kt_tr_def.txt 2>&1
CONVT_BWD_COLS=off timeout 45 python scripts/kernel_times.py $TR > $R/kt_tr_colsoff.txt 2>&1
CONVT_BWD_GI=forward timeout 45 python scripts/kernel_times.py $TR > $R/kt_tr_gifwd.txt 2>&1
for f in def colsoff gifwd; do echo "== tr $f"; grep "^## " $R/kt_tr_$f.txt; done
echo "kt train $(( $(date +%s)-S )) s"; S=$(date +%s)
cd $OUT && tar czf logs.tgz r && rm -rf r
