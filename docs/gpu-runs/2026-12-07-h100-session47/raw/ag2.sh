# Call AG2: the refactored dispatch tests (backward_profiled / assert_asked_grads) on the final tree.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; M=$PWD
nvidia-smi -L; S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $OUT/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout 120 python -m pytest tests/test_cuda.py -q -p no:cacheprovider -k "float32_channels_last_residues or grad_input_alone_kernel_equals_stride" > $OUT/tests.log 2>&1
echo "tests rc=$? $(tail -1 $OUT/tests.log) $(( $(date +%s)-S )) s"
