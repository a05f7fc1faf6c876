# Call AC2: dcgan_g2's forward under each forward family and cuBLAS API (device + host time per call, bench's own columns).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; R=$OUT/r; mkdir -p $R; M=$PWD
S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $R/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
C=bfloat16:channels_last:fwd,bfloat16:nchw:fwd,float32:nchw:fwd
for v in "X=1" "CONVT_GEMM_LT=0" "CONVT_FWD_PATH=igemm" "CONVT_FWD_PATH=wgmma"; do
  env $v PYTHONPATH=$M python -m convt_op bench --configs $C --shapes dcgan_g2,dcgan_g4 --device-time --host-time --out $R/f_${v//=/_} > $R/f_${v//=/_}.log 2>&1
  echo "== $v rc=$?"; grep "^| dcgan" $R/f_${v//=/_}.log | cut -d'|' -f2-13
done
for v in "X=1" "CONVT_GEMM_LT=0"; do
  env $v PYTHONPATH=$M python -m convt_op bench --configs bfloat16:channels_last:fwdbwd,float32:nchw:fwdbwd --shapes dcgan_g2 --device-time --host-time --out $R/b_${v//=/_} > $R/b_${v//=/_}.log 2>&1
  echo "== fwdbwd $v rc=$?"; grep "^| dcgan" $R/b_${v//=/_}.log | cut -d'|' -f2-13
done
echo "total $(( $(date +%s)-S )) s"
