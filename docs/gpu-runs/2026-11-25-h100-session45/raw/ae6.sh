# AE6 (fresh machine): final tree of the session's kernel work: the staged depthwise backward with 16-column tiles for
# kernels above 3 x 3 and its register bounds; tests/test_cuda.py whole; the depthwise rows staged against the walk;
# each backward kernel alone (bench --configs kernels: the per-kernel dataset of record).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S0=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S0 )) s"
S=$(date +%s)
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 260 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/12 > $R/test_cuda_${k}_of_12.log 2>&1 & done; wait
echo "test_cuda $(( $(date +%s)-S )) s"; for k in $(seq 0 11); do f=$R/test_cuda_${k}_of_12.log; echo "$(basename $f): $(tail -1 $f)"; grep -E "^FAILED|Interrupt" $f | head -3; done
for v in "X=1" "CONVT_BWD_DW=walk"; do t=$(echo $v | tr ' =' '__')
  env $v PYTHONPATH=$M timeout 60 python -m convt_op bench --configs bfloat16:channels_last:grad_input,bfloat16:channels_last:grad_weight,float32:channels_last:grad_input,float32:channels_last:grad_weight,bfloat16:channels_last:fwdbwd,float16:channels_last:grad_input --shapes depthwise_s2,depthwise_k4s2 --device-time --out $R/dw_$t > $R/dw_$t.log 2>&1
  echo "== $v rc=$?"; grep "^| depth" $R/dw_$t.log | cut -d'|' -f2,3,5,6,7,8,9,10,13
done
E=$(( $(date +%s)-S0 )); echo "kernels from $E s"
if [ $E -lt 430 ]; then PYTHONPATH=$M timeout $((590-E)) python -m convt_op bench --configs kernels --device-time --out $OUT/kernels > $R/kernels.log 2>&1; echo "kernels rc=$? $(( $(date +%s)-S0 )) s"; grep -B2 -A10 "geomean speedup" $OUT/kernels/results.md | head -14; fi
cd $OUT && tar czf r.tgz r && rm -rf r
