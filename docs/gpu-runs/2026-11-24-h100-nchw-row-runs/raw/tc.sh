# Run TC: NCHW epilogue runs at SW == 1 (working tree): tests, then kernel times per knob setting.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
OMP_NUM_THREADS=4 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -x -k "row_runs or paired_phases or via_channels_last or grad_input_nchw" > $R/tests.log 2>&1; echo "tests rc=$? $(( $(date +%s)-S )) s"; tail -3 $R/tests.log; S=$(date +%s)
F="kb1_71_rect_k3 kb1_78_pad_k3x7 kb1_69_k3x5 kb1_57_square kb1_65_k3x7 kb2_10_k3_p1"
FW32=$(for s in $F; do echo -n "$s:float32:nchw:fwd "; done); FW16=$(for s in $F; do echo -n "$s:bfloat16:nchw:fwd "; done)
TR="kb2_2_s2_op1:float32:nchw:fwdbwd kb2_93_k4_s2:float32:nchw:fwdbwd kb2_5_k4_s2:bfloat16:nchw:fwdbwd kb2_93_k4_s2:bfloat16:nchw:fwdbwd"
export KT_OURS_ONLY=1
CONVT_FWD_VIA_CL=0 timeout 100 python scripts/kernel_times.py $FW32 > $R/kt_f32_nchwkernel.txt 2>&1
CONVT_FWD_VIA_CL=all timeout 100 python scripts/kernel_times.py $FW32 $FW16 > $R/kt_all_vec.txt 2>&1
CONVT_FWD_VIA_CL=all CONVT_FWD_WS_NCHW_VEC=0 timeout 100 python scripts/kernel_times.py $FW32 $FW16 > $R/kt_all_novec.txt 2>&1
timeout 100 python scripts/kernel_times.py $FW16 $TR > $R/kt_default.txt 2>&1
CONVT_FWD_WS_NCHW_VEC=0 timeout 100 python scripts/kernel_times.py $TR > $R/kt_default_novec.txt 2>&1
echo "kt $(( $(date +%s)-S )) s"
for f in kt_f32_nchwkernel kt_all_vec kt_all_novec kt_default kt_default_novec; do echo "== $f"; grep -E "^## |Error|error" $R/$f.txt | sed 's/: wall [0-9]* us\/step,//' | cut -c1-90; done
cd $OUT && tar czf logs.tgz r && rm -rf r
