# Run TL: NCHW small-plane gather with per-thread decode (TK's form issued on 81% of cycles): gather tests, A/B against the rows kernel, then the whole tests/test_cuda.py.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=8 timeout -s INT 90 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "gather" > $R/tests_gather.log 2>&1; echo "gather tests $(( $(date +%s)-S )) s: $(tail -1 $R/tests_gather.log)"; grep -E "^FAILED|^E  " $R/tests_gather.log | head -8; S=$(date +%s)
ROWS="dcgan_g2:float32:nchw:fwd dcgan_g2:bfloat16:nchw:fwd dcgan_g2:float16:nchw:fwd dcgan_g2:float32:nchw:fwdbwd dcgan_g2:bfloat16:nchw:fwdbwd"
export KT_OURS_ONLY=1
timeout 40 python scripts/kernel_times.py $ROWS > $R/kt_new.txt 2>&1
CONVT_FWD_GATHER_SMALL_PLANES=0 timeout 40 python scripts/kernel_times.py $ROWS > $R/kt_old.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
paste <(grep "^## " $R/kt_old.txt | sed 's/## //; s/ ours: wall [0-9]* us\/step, device / /; s/ us\/step//') <(grep "^## " $R/kt_new.txt | sed 's/.*device //; s/ us\/step//') | awk '{printf "%-42s rows %7s small %7s  %.3f\n", $1, $2, $3, $3/$2}'
grep -h "col2im" $R/kt_old.txt $R/kt_new.txt | cut -c1-100
unset KT_OURS_ONLY
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 240 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_cuda_$k.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_cuda_$k.log; grep FAILED $R/test_cuda_$k.log; done
cd $OUT && tar czf logs.tgz r && rm -rf r
