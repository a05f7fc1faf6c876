# Run WE: 64-byte rows in the warp-specialized forward (uncommitted, on 67fea80): build; tests/test_cuda.py whole (12 shards);
# kernel times CONVT_FWD_WS_ROW=32 against the default rule; memcheck on the tall / 64-byte cases.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { grep -m5 -A5 "error" $R/build.log; tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; P=0; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; grep -m2 -A30 "^____" $f | grep -E "^E " | cut -c1-250 | head -4; done; S=$(date +%s)
kt() { local tag=$1; shift; env "$@" KT_OURS_ONLY=1 timeout 120 python scripts/kernel_times.py $SPECS > $R/kt_$tag.txt 2>&1; }
SPECS="kb2_2_s2_op1:bfloat16:channels_last:fwd kb2_5_k4_s2:bfloat16:channels_last:fwd kb2_2_s2_op1:float32:channels_last:fwd kb1_57_square:bfloat16:channels_last:fwd kb2_93_k4_s2:bfloat16:channels_last:fwd kb2_2_s2_op1:float32:nchw:fwd dcgan_g4:bfloat16:channels_last:fwd kb2_2_s2_op1:bfloat16:channels_last:fwdbwd"
kt row64; kt row32 CONVT_FWD_WS_ROW=32
SPECS="dcgan_g2:bfloat16:channels_last:fwd dcgan_g2:float32:channels_last:fwd"; kt tall64 CONVT_FWD_PATH=wgmma; kt tall32 CONVT_FWD_PATH=wgmma CONVT_FWD_WS_ROW=32
echo "kernel times $(( $(date +%s)-S )) s"; S=$(date +%s)
for t in row64 row32 tall64 tall32; do echo "== $t"; grep -A2 "^##" $R/kt_$t.txt | grep -v "^--" | cut -c1-140; done
timeout 100 compute-sanitizer --tool memcheck python scratch/lead/san_tall.py > $R/san_memcheck.log 2>&1; echo "memcheck rc=$? $(grep -c 'rel err' $R/san_memcheck.log) cases; $(grep -E 'ERROR SUMMARY' $R/san_memcheck.log) $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
