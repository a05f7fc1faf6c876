# Call AI3 (the last of the device budget, after failed starts): the channels_last rows grad_weight with TF32 rounding
# once per staged word (kRoundStaged) against rounding at each fragment load (CONVT_BWD_GW_ROWS_CL_ROUND=load):
# bit-identity and float64 checks (wide_ab.py), then per-kernel device times on 6 shapes. No tests, bench or ncu.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
CONVT_BWD_GW_ROWS_CL_ROUND=load PYTHONPATH=$M timeout 40 python scratch/lead/wide_ab.py $R/load.pt > $R/ab.log 2>&1; echo "load rc=$?"
PYTHONPATH=$M timeout 40 python scratch/lead/wide_ab.py $R/staged.pt $R/load.pt >> $R/ab.log 2>&1; echo "staged rc=$?"; tail -3 $R/ab.log; rm -f $R/*.pt
GK="kb1_57_square:float32:channels_last:grad_weight kb2_10_k3_p1:float32:channels_last:grad_weight kb1_65_k3x7:float32:channels_last:grad_weight kb2_2_s2_op1:float32:channels_last:grad_weight"
for v in staged load; do CONVT_BWD_GW_ROWS_CL_ROUND=$v KT_OURS_ONLY=1 PYTHONPATH=$M timeout 40 python scratch/lead/grad_kernels.py $GK > $R/gk_$v.txt 2>&1; echo "gk $v rc=$? $(( $(date +%s)-S )) s"; grep -E "##|rows_cl" $R/gk_$v.txt | cut -c1-120 | head -8; done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
