# Call AH1 (fresh machine): build; the float32 channels_last rows grad_weight's tests and neighbours; bench float32
# channels_last grad_weight alone + training (18 shapes) on the new default; grad_weight alone with
# CONVT_BWD_GW_ROWS_CL=0 (the NCHW copies) on the shapes it takes; per-kernel times; then tests/test_cuda.py whole.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 150 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "rows_channels_last or float32_channels_last_residues or test_grad_weight_rows or test_grad_weight_wgmma_tf32 or bias_fused_rows" > $R/tests_new.log 2>&1; echo "new tests rc=$? $(tail -1 $R/tests_new.log) $(( $(date +%s)-S )) s"
grep -h "^FAILED\|Error\|assert" $R/tests_new.log | head -8
PYTHONPATH=$M timeout 150 python -m convt_op bench --configs float32:channels_last:grad_weight,float32:channels_last:fwdbwd --device-time --out $R/f32cl > $R/f32cl.log 2>&1
echo "== bench rc=$? $(( $(date +%s)-S )) s"
SH=kb1_57,kb1_65,kb1_69,kb1_71,kb1_78,kb2_2,kb2_5,kb2_10,kb2_93
CONVT_BWD_GW_ROWS_CL=0 PYTHONPATH=$M timeout 80 python -m convt_op bench --configs float32:channels_last:grad_weight --shapes $SH --device-time --out $R/f32cl_off > $R/f32cl_off.log 2>&1
echo "== bench off rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py kb2_2_s2_op1:float32:channels_last:grad_weight kb2_10_k3_p1:float32:channels_last:grad_weight kb1_65_k3x7:float32:channels_last:grad_weight > $R/gk.txt 2>&1; echo "gk rc=$? $(( $(date +%s)-S )) s"
left=$(( 540 - ($(date +%s)-S) )); echo "full tests get $left s"
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout $left python -m pytest tests/test_cuda.py -q -p no:cacheprovider --shard $k/12 > $R/tc_$k.log 2>&1 & done; wait
for k in $(seq 0 11); do echo "shard $k: $(tail -1 $R/tc_$k.log)"; done; grep -h "^FAILED" $R/tc_*.log | head -20
echo "-- new default"; grep "^| kb\|^| dcgan\|^| unet\|^| mask\|^| depth" $R/f32cl.log | cut -d'|' -f2,4,6,9,10,11,13 | head -40
echo "-- ROWS_CL=0"; grep "^| kb" $R/f32cl_off.log | cut -d'|' -f2,4,6,9,10,11,13
grep "##\|rows_cl\|rows_async\|nhwc" $R/gk.txt | head -30
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
