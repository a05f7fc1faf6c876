# Next session, call 1: build main and wip/nchw-in-template (scratch/wip: git archive of the branch, docs removed) side by side.
# carry: scratch/lead scratch/wip. Refresh scratch/wip first if the branch moved.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=8; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
(PYTHONPATH=$PWD python -m convt_op build > $R/build_main.log 2>&1; echo "main rc=$? $(( $(date +%s)-S )) s") &
(cd scratch/wip && PYTHONPATH=$PWD python -m convt_op build > $R/build_wip.log 2>&1; echo "wip rc=$? $(( $(date +%s)-S )) s") &
wait; ls .devbuild
