# Run QS: build (grad_input's forwards through the route too), tests/test_cuda.py whole (5 shards), kernel_times NCHW bf16 training default vs CONVT_FWD_VIA_CL=0.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 240 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
KT="kb1_71_rect_k3:bfloat16:nchw:fwdbwd kb1_78_pad_k3x7:bfloat16:nchw:fwdbwd kb1_69_k3x5:bfloat16:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd"
timeout 90 python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1
CONVT_FWD_VIA_CL=0 timeout 90 python scripts/kernel_times.py $KT > $R/kt_off.txt 2>&1
for f in kt_default kt_off; do echo "== $f"; grep -E "^## .*ours" $R/$f.txt | cut -c1-110; done
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
