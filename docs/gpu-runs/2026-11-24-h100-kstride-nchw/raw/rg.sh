# Run RG: build HEAD; each backward kernel alone against its floor (NCHW float32 / bf16 grad_input and grad_weight); device against wall time of the host-bound training rows.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
timeout -s INT 200 python -m convt_op bench --configs float32:nchw:grad_input,float32:nchw:grad_weight,bfloat16:nchw:grad_input,bfloat16:nchw:grad_weight --out $OUT/bwd > $R/bench_bwd.log 2>&1; echo "bwd bench rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
grep -A8 "geomean speedup" $OUT/bwd/results.md | head -8
KT="dcgan_g2:bfloat16:nchw:fwdbwd dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd unet_up4:bfloat16:channels_last:fwdbwd unet_up4:bfloat16:nchw:fwdbwd dcgan_g4:float16:nchw:fwdbwd dcgan_g2:float16:nchw:fwdbwd"
timeout 100 python scripts/kernel_times.py $KT > $R/kt_hostbound.txt 2>&1; grep -E "^## " $R/kt_hostbound.txt | cut -c1-110
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
