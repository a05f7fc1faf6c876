# Call AG1 (fresh machine): build; the new float32 channels_last residue rule's tests and its neighbours; the
# float32 channels_last grad_input / training bench on all 18 shapes; per-kernel times of the training step on the
# three strided rows; then tests/test_cuda.py whole in 12 shards (what time is left).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 150 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -x -k "float32_channels_last_residues or residue_planes_in_place or grad_input_alone or channels_last_operands" > $R/tests_rule.log 2>&1; echo "rule tests rc=$? $(tail -1 $R/tests_rule.log) $(( $(date +%s)-S )) s"
PYTHONPATH=$M timeout 200 python -m convt_op bench --configs float32:channels_last:grad_input,float32:channels_last:fwdbwd --device-time --out $R/f32cl > $R/f32cl.log 2>&1
echo "== bench rc=$? $(( $(date +%s)-S )) s"; grep "^| float32" $R/f32cl.log | head -3
PYTHONPATH=$M timeout 60 python scratch/lead/grad_kernels.py kb2_2_s2_op1:float32:channels_last:both kb2_5_k4_s2:float32:channels_last:both kb2_93_k4_s2:float32:channels_last:both > $R/gk.txt 2>&1; echo "gk rc=$? $(( $(date +%s)-S )) s"
left=$(( 500 - ($(date +%s)-S) )); echo "full tests get $left s"
for k in $(seq 0 11); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout $left python -m pytest tests/test_cuda.py -q -p no:cacheprovider --shard $k/12 > $R/tc_$k.log 2>&1 & done; wait
for k in $(seq 0 11); do echo "shard $k: $(tail -1 $R/tc_$k.log)"; done; grep -h "^FAILED" $R/tc_*.log | head -20
grep "^| kb\|^| dcgan\|^| unet\|^| mask\|^| depth" $R/f32cl.log | cut -d'|' -f2,6,9,10,11,13
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
