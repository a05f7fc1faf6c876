# Run WB: WA's tree (tall tiles in the warp-specialized forward, uncommitted): tests/test_cuda.py whole (12 shards); then our C++
# host trace (CONVT_HOST_TRACE=1) of the host-bound bf16 / float32 NCHW training rows, and PyTorch's host time on them.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do OMP_NUM_THREADS=1 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4 5 6 7 8 9 10 11; do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
for spec in dcgan_g2:bfloat16:nchw dcgan_g4:bfloat16:nchw dcgan_g2:float32:nchw; do CONVT_HOST_TRACE=1 HA_WHO=ours timeout 60 python scratch/lead/host_api.py $spec > $R/host_trace_${spec%:*}.txt 2>&1; done
HA_WHO=pytorch timeout 90 python scratch/lead/host_api.py dcgan_g2:bfloat16:nchw dcgan_g4:bfloat16:nchw dcgan_g2:float32:nchw > $R/host_pytorch.txt 2>&1
echo "host traces $(( $(date +%s)-S )) s"; for f in $R/host_trace_*.txt; do echo "== $f"; grep -E "^##|^convt host|autograd\.|op\.|cuda\.(forward|backward|cublas_gemm|layout)" $f | grep -v "plan_lookup\|handle\|workspace" | cut -c1-110 | head -24; done; grep "^##" $R/host_pytorch.txt
cd $OUT && tar czf logs.tgz r && rm -rf r
