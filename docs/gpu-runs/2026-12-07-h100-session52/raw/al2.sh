# AL2: A from registers (wgmma RS form, ldmatrix.trans, one load per 16-pixel step for all of a
# consumer's taps) in the warp-specialized grad_weight, against A from shared memory
# (CONVT_BWD_GW_WS_RA=0). Tests first, then bench and kernel times on the ws kernel's suite rows,
# then ncu of kb1_78 (narrow) and kb1_57 (wide): L1 against the tensor pipe.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 200 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "test_grad_weight_warp_specialized or test_grad_weight_nchw_via_channels_last" > $R/ws.log 2>&1; echo "ws tests: $(tail -1 $R/ws.log) $(( $(date +%s)-S )) s"; grep -h "^FAILED\|^E " $R/ws.log | head -8
SH=kb1_71_rect_k3,kb1_78_pad_k3x7,kb1_57_square,kb1_65_k3x7,kb1_69_k3x5,kb2_10_k3_p1,kb2_2_s2_op1,kb2_5_k4_s2,kb2_93_k4_s2
for v in ra smem; do CONVT_BWD_GW_WS_RA=$([ $v = smem ] && echo 0) PYTHONPATH=$M timeout 120 python -m convt_op bench --configs bfloat16:channels_last:grad_weight,bfloat16:channels_last:fwdbwd,bfloat16:nchw:grad_weight --shapes $SH --device-time --out $R/b_$v > $R/b_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-S )) s"; done
for v in ra smem; do echo "-- $v"; grep "^| kb" $R/b_$v.log | cut -d"|" -f2,5,6,7,8,9,10,11,13,16; done
GK=""; for s in ${SH//,/ }; do GK="$GK $s:bfloat16:channels_last:grad_weight"; done
for v in ra smem; do CONVT_BWD_GW_WS_RA=$([ $v = smem ] && echo 0) KT_OURS_ONLY=1 PYTHONPATH=$M timeout 60 python scratch/lead/grad_kernels.py $GK > $R/gk_$v.txt 2>&1; echo "gk $v rc=$?"; done
paste <(grep -E "ws_kernel" $R/gk_ra.txt | awk '{print $1}') <(grep -E "ws_kernel" $R/gk_smem.txt | awk '{print $1}') <(grep -E "##" $R/gk_ra.txt | awk '{print $2}')
MET="gpu__time_duration.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.pct_of_peak_sustained_active"
for c in kb1_78_pad_k3x7 kb1_57_square; do for v in ra smem; do CONVT_BWD_GW_WS_RA=$([ $v = smem ] && echo 0) PYTHONPATH=$M timeout 60 ncu --clock-control none --profile-from-start off --kernel-name regex:grad_weight_ws --metrics "$MET" python scratch/lead/ncu_case.py $c:bfloat16:channels_last:grad_weight > $R/ncu_${c}_$v.txt 2>&1; echo "ncu $c $v rc=$? $(grep -E 'duration|l1tex__t|pipe_tensor|warps_active' $R/ncu_${c}_$v.txt | awk '{print $NF}' | tr '\n' ' ')"; done; done
echo "total $(( $(date +%s)-S )) s"; cd $OUT && tar czf r.tgz r && rm -rf r
