# Run RA: build HEAD (7267be5), targeted tests of 061f409/2ca62f3/90346d7, float32 NCHW training with grad_input through the residues (CONVT_BWD_GI_VIA_CL=all) against the planes (=0) and the default.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
K="plane_kernel or grad_input_nchw_via or via_channels_last or block_rule or fresh_process or residue"
for k in 0 1 2 3; do OMP_NUM_THREADS=4 timeout -s INT 150 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider -k "$K" --shard $k/4 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
KT="kb2_93_k4_s2:float32:nchw:fwdbwd kb2_2_s2_op1:float32:nchw:fwdbwd kb2_5_k4_s2:float32:nchw:fwdbwd dcgan_g4:float32:nchw:fwdbwd dcgan_g2:float32:nchw:fwdbwd"
timeout 110 python scripts/kernel_times.py $KT > $R/kt_default.txt 2>&1
CONVT_BWD_GI=forward CONVT_BWD_GI_VIA_CL=all timeout 110 python scripts/kernel_times.py $KT > $R/kt_all.txt 2>&1
CONVT_BWD_GI=forward CONVT_BWD_GI_VIA_CL=0 timeout 110 python scripts/kernel_times.py $KT > $R/kt_planes.txt 2>&1
for f in kt_default kt_all kt_planes; do echo "== $f"; grep -E "^## .*ours" $R/$f.txt | cut -c1-110; done
grep -E "^## .*pytorch" $R/kt_default.txt | cut -c1-110
echo "kt $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
