# Call AC1 (fresh machine): build main; first GPU run of bench --host-time on the dcgan rows (record configs);
# C++ host trace (CONVT_HOST_TRACE=1) of the host-bound training rows; host time per step (host_ab.py).
# carry: scratch/lead
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M python -m convt_op bench --configs record --shapes dcgan_g2,dcgan_g4 --device-time --host-time --out $R/small > $R/small.log 2>&1; echo "small bench rc=$? $(( $(date +%s)-S )) s"
tail -40 $R/small.log | cut -c1-200
for spec in dcgan_g4:bfloat16:channels_last dcgan_g2:bfloat16:channels_last dcgan_g2:float32:nchw dcgan_g2:bfloat16:nchw; do
  (CONVT_HOST_TRACE=1 PYTHONPATH=$M:$M/scratch/lead timeout 60 python scratch/lead/host_clean.py $spec > $R/trace_${spec//:/_}.txt 2>&1)
  echo "== $spec"; tail -25 $R/trace_${spec//:/_}.txt | cut -c1-120
done
(PYTHONPATH=$M:$M/scratch/lead ROUNDS=5 N=30 timeout 120 python scratch/lead/host_ab.py dcgan_g4:bfloat16:channels_last dcgan_g2:bfloat16:channels_last dcgan_g2:float32:nchw > $R/host_ab.txt 2>&1); grep "##" $R/host_ab.txt
echo "total $(( $(date +%s)-S )) s"
