# Run UB: the 16-bit NCHW grad_weight ring kernel with its loads split (warpgroup 0: x, warpgroup 1: grad_output rows) against warpgroup 0 staging both (knob CONVT_BWD_GW_RING_GO_WG=0): every grad_weight test, kernel times, bf16 NCHW training bench.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3; do OMP_NUM_THREADS=2 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "grad_weight or sanitizer_smoke" --shard $k/4 > $R/tests_gw_$k.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for f in $R/tests_gw_*.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f; done; S=$(date +%s)
ROWS="kb1_57_square:bfloat16:nchw:fwdbwd kb1_69_k3x5:bfloat16:nchw:fwdbwd kb2_10_k3_p1:bfloat16:nchw:fwdbwd kb1_57_square:float16:nchw:fwdbwd"
export KT_OURS_ONLY=1
for v in 0 1; do CONVT_BWD_GW_RING_GO_WG=$v timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_go_wg$v.txt 2>&1; done
CONVT_BWD_GW_RING_GO_WG=0 timeout 60 python scripts/kernel_times.py $ROWS > $R/kt_go_wg0_again.txt 2>&1
for f in go_wg0 go_wg1 go_wg0_again; do echo "== $f"; grep -h "^## \|grad_weight_wgmma" $R/kt_$f.txt | cut -c1-110; done
unset KT_OURS_ONLY
echo "kt $(( $(date +%s)-S )) s"; S=$(date +%s)
(cd $OUT && tar czf logs.tgz r)
timeout -s INT 80 python -m convt_op bench --configs bfloat16:nchw:fwdbwd --device-time --out $OUT/bf16train > $R/bench_bf16.log 2>&1; echo "bench rc=$? $(( $(date +%s)-S )) s"
grep -A3 "geomean speedup" $OUT/bf16train/results.md | tail -1
cd $OUT && tar czf logs.tgz r && rm -rf r
