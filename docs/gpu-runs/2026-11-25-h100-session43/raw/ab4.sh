# Call AB4: build the branch (grad_weight_ws templated on TX); tests/test_cuda.py whole; kernel times of the
# 64-column ws grad_weight rows (against AB3: base 665 / 563 / 780 us, flat loop 713 / 595 / 837) and the DCGAN rows.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
T64="kb1_69_k3x5:bfloat16:channels_last:fwdbwd kb2_5_k4_s2:bfloat16:channels_last:fwdbwd kb2_2_s2_op1:bfloat16:channels_last:fwdbwd dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g4:float16:channels_last:fwdbwd"
(PYTHONPATH=$M KT_OURS_ONLY=1 timeout 90 python scripts/kernel_times.py $T64 > $R/kt_1.txt 2>&1); grep -E "##|grad_weight_ws" $R/kt_1.txt | cut -c1-110
S=$(date +%s)
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 270 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in $(seq 0 11); do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep -E "^FAILED|Interrupt" $f | head -3; done
(PYTHONPATH=$M KT_OURS_ONLY=1 timeout 90 python scripts/kernel_times.py $T64 > $R/kt_2.txt 2>&1); grep -E "##|grad_weight_ws" $R/kt_2.txt | cut -c1-110
cd $OUT && tar czf logs.tgz r && rm -rf r
