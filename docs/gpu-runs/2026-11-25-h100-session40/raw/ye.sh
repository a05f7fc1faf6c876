# Run YE (main d0195a9: 32-bit epilogue offsets + 16-bit half staging): the benchmark of record (11 configs,
# --device-time) + strict fp32 + each backward kernel alone; then knob probes (kernel us) on dcgan_g4 float32 NCHW
# and kb1_69 bf16 channels_last.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 300 python -m convt_op bench --configs record --device-time --out $OUT/record > $R/bench_record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 45 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/record/strict-fp32 > $R/bench_strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
grep -A16 "geomean speedup" $OUT/record/results.md | head -16
grep -A4 "geomean speedup" $OUT/record/strict-fp32/results.md | head -4
P() { echo "--- $1"; shift; env "$@" KT_OURS_ONLY=1 timeout 40 python scripts/kernel_times.py $ROW 2>&1 | grep -E "##|   " | grep -v pack_weights | cut -c1-110; }
ROW=dcgan_g4:float32:nchw:fwd
P default A=1; P quarters_0 CONVT_FWD_WS_NCHW_QUARTERS=0; P quarters_all CONVT_FWD_WS_NCHW_QUARTERS=all; P wide_0 CONVT_FWD_WS_WIDE=0; P stream CONVT_FWD_WS_WEIGHTS=stream
ROW=kb1_69_k3x5:bfloat16:channels_last:fwd
P default A=1; P wide_all CONVT_FWD_WS_WIDE=all; P tx65_wide CONVT_FWD_WS_WIDE=all CONVT_FWD_WS_TX=65; P tx52_wide CONVT_FWD_WS_WIDE=all CONVT_FWD_WS_TX=52
echo "probes $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 150 python -m convt_op bench --configs float32:nchw:grad_input,float32:nchw:grad_weight,bfloat16:nchw:grad_input,bfloat16:nchw:grad_weight --device-time --out $OUT/backward_kernels > $R/bench_bwd.log 2>&1; echo "bwd rc=$? $(( $(date +%s)-S )) s"
grep -A6 "geomean speedup" $OUT/backward_kernels/results.md | head -6
cd $OUT && tar czf logs.tgz r && rm -rf r
