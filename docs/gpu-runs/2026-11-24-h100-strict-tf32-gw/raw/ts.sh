# Run TS: split kernel with several short columns per block (stacked flat split fix): strict kernel times, gemm/gather/3xtf32 tests, strict benchmark; dcgan_g4 training probes (bf16 channels_last, float32 NCHW).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
ROWS="dcgan_g4:float32strict:nchw:fwd maskrcnn_mask:float32strict:nchw:fwd unet_up4:float32strict:nchw:fwd dcgan_g2:float32strict:nchw:fwd unet_up4:float32strict:channels_last:fwd dcgan_g2:float32strict:channels_last:fwd"
KT_OURS_ONLY=1 timeout 45 python scripts/kernel_times.py $ROWS > $R/kt_strict.txt 2>&1
grep "^## " $R/kt_strict.txt; grep -h -A5 "## dcgan_g4:float32strict\|## maskrcnn\|## dcgan_g2:float32strict:nchw" $R/kt_strict.txt | grep "split\|##" | cut -c1-100
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 40 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/strict > $R/bench_strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/strict/results.md | tail -1
TR="dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g4:float32:nchw:fwdbwd"
timeout 40 python scripts/kernel_times.py $TR > $R/kt_tr_def.txt 2>&1
CONVT_BWD_COLS=off CONVT_BWD_GI=forward timeout 40 python scripts/kernel_times.py $TR > $R/kt_tr_off_gifwd.txt 2>&1
CONVT_BWD_COLS=off CONVT_BWD_GI=forward CONVT_BWD_GW=wgmma timeout 40 python scripts/kernel_times.py $TR > $R/kt_tr_off_gifwd_gwwgmma.txt 2>&1
for f in def off_gifwd off_gifwd_gwwgmma; do echo "== tr $f"; grep -A9 "^## .*ours" $R/kt_tr_$f.txt | cut -c1-140; done
grep "^## .*pytorch" $R/kt_tr_def.txt
echo "kt train $(( $(date +%s)-S )) s"
S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "gemm or gather or 3xtf32 or slice or kernel_equals_stride" > $R/tests_gemm.log 2>&1
echo "tests $(( $(date +%s)-S )) s"; tail -1 $R/tests_gemm.log; grep FAILED $R/tests_gemm.log
cd $OUT && tar czf logs.tgz r && rm -rf r
