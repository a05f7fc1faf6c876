# Call AB3: build main (scratch/base) and the narrow-tile branch (working tree) side by side; the ws
# grad_weight / small-image tests on the branch; kernel times (DCGAN rows: rule vs CONVT_BWD_SMALL_WS=0;
# TX=64 rows: base vs branch); host per step.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=8; R=$OUT/r; mkdir -p $R; M=$PWD; B=$PWD/scratch/base
nvidia-smi -L; S=$(date +%s)
(PYTHONPATH=$M python -m convt_op build > $R/build_new.log 2>&1; echo "new rc=$? $(( $(date +%s)-S )) s") &
(cd $B && PYTHONPATH=$B python -m convt_op build > $R/build_base.log 2>&1; echo "base rc=$? $(( $(date +%s)-S )) s") &
wait; S=$(date +%s)
K="grad_weight_warp_specialized or backward_bias_fused_ws or small_images or backward_columns or grad_weight_wgmma or gw_ws or in_place"
for k in $(seq 0 7); do PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 200 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/8 > $R/t_${k}.log 2>&1 & done; wait
echo "tests $(( $(date +%s)-S )) s"; for k in $(seq 0 7); do f=$R/t_${k}.log; echo "$(basename $f): $(tail -1 $f)"; grep -E "^FAILED|Interrupt|Error" $f | head -5; done
D4="dcgan_g4:bfloat16:channels_last:fwdbwd dcgan_g4:float16:channels_last:fwdbwd dcgan_g2:bfloat16:channels_last:fwdbwd"
T64="kb1_69_k3x5:bfloat16:channels_last:fwdbwd kb2_5_k4_s2:bfloat16:channels_last:fwdbwd kb2_2_s2_op1:bfloat16:channels_last:fwdbwd"
for pass in 1 2; do
  for v in new:$M: cols:$M:CONVT_BWD_SMALL_WS=0; do name=${v%%:*}; rest=${v#*:}; D=${rest%%:*}; knob=${rest#*:}
    (cd $D && env $knob PYTHONPATH=$D KT_OURS_ONLY=1 timeout 60 python $M/scripts/kernel_times.py $D4 > $R/kt_${name}_$pass.txt 2>&1)
    echo "== $name pass $pass"; grep -v -i warn $R/kt_${name}_$pass.txt | grep -A7 "##" | cut -c1-110 | grep -v "^--"
  done
  for v in base:$B new:$M; do name=${v%%:*}; D=${v#*:}
    (cd $D && PYTHONPATH=$D KT_OURS_ONLY=1 timeout 90 python $M/scripts/kernel_times.py $T64 > $R/kt64_${name}_$pass.txt 2>&1)
    echo "== T64 $name pass $pass"; grep -E "##|grad_weight_ws" $R/kt64_${name}_$pass.txt | cut -c1-110
  done
done
cd $OUT && tar czf logs.tgz r
cd $M
(PYTHONPATH=$M:$M/scratch/lead ROUNDS=5 N=30 timeout 100 python scratch/lead/host_ab.py dcgan_g4:bfloat16:channels_last dcgan_g4:float16:channels_last > $R/host_new.txt 2>&1); grep "##" $R/host_new.txt
(CONVT_BWD_SMALL_WS=0 PYTHONPATH=$M:$M/scratch/lead ROUNDS=5 N=30 timeout 100 python scratch/lead/host_ab.py dcgan_g4:bfloat16:channels_last dcgan_g4:float16:channels_last > $R/host_cols.txt 2>&1); grep "##" $R/host_cols.txt
cd $OUT && tar czf logs.tgz r && rm -rf r
