# Run XH (warm after XG): forward_wgmma_ws.cu of 67fea80 (tall tiles, the first of the two reverted commits) built in place, the same ncu as XG.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
F=csrc/cuda/forward_wgmma_ws.cu; git show 67fea80:$F > $F
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; git checkout $F; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
source scratch/lead/ncu_block.sh tall; echo "ncu $(( $(date +%s)-S )) s"
git checkout $F
cd $OUT && tar czf logs.tgz r && rm -rf r
