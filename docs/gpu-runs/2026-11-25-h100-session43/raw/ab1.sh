# Call AB1: build main (fb81747) and wip/gw-ws-narrow-images (scratch/wip) side by side, then tests/test_cuda.py whole on main (covers 452a434, fb81747).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=8; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
(PYTHONPATH=$PWD python -m convt_op build > $R/build_main.log 2>&1; echo "main rc=$? $(( $(date +%s)-S )) s") &
(cd scratch/wip && PYTHONPATH=$PWD python -m convt_op build > $R/build_wip.log 2>&1; echo "wip rc=$? $(( $(date +%s)-S )) s") &
wait; S=$(date +%s)
for k in $(seq 0 11); do PYTHONPATH=$PWD OMP_NUM_THREADS=1 timeout -s INT 270 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in $(seq 0 11); do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep -E "FAILED|Interrupt" $f | head -3; done
cd $OUT && tar czf logs.tgz r && rm -rf r
