# Call AH2: taps per block for the float32 channels_last rows grad_weight (CONVT_BWD_GW_ROWS_CL_TAPS=4 | 3 | 2) on
# the shapes whose kernel rows have 4 or 7 taps (one block per SM at 4 taps); its tests under each.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
for T in 2 3; do CONVT_BWD_GW_ROWS_CL_TAPS=$T PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 100 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "rows_channels_last or test_grad_weight_rows" > $R/tests_t$T.log 2>&1 & done
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 100 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "rows_channels_last or grad_weight_wgmma_tf32" > $R/tests_t4.log 2>&1 & wait
for T in 2 3 4; do echo "tests taps $T: $(tail -1 $R/tests_t$T.log)"; done; grep -h "^FAILED" $R/tests_t*.log | head
SH=kb1_65,kb1_78,kb2_5,kb2_93,kb1_69,kb2_2
for T in 4 3 2; do CONVT_BWD_GW_ROWS_CL_TAPS=$T PYTHONPATH=$M timeout 100 python -m convt_op bench --configs float32:channels_last:grad_weight,float32:channels_last:fwdbwd --shapes $SH --device-time --out $R/t$T > $R/t$T.log 2>&1; echo "bench taps $T rc=$? $(( $(date +%s)-S )) s"; done
for T in 4 3 2; do CONVT_BWD_GW_ROWS_CL_TAPS=$T KT_OURS_ONLY=1 PYTHONPATH=$M timeout 30 python scratch/lead/grad_kernels.py kb2_5_k4_s2:float32:channels_last:grad_weight kb1_65_k3x7:float32:channels_last:grad_weight > $R/gk_t$T.txt 2>&1; done
for T in 4 3 2; do echo "-- taps $T"; grep "^| kb" $R/t$T.log | cut -d'|' -f2,6,9,10,11,13; grep -A1 "##" $R/gk_t$T.txt | grep -v "^--"; done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
