# Call AB6 (the session's last device seconds): build the final tree; the small-image and columns dispatch tests (the lazy rule after AB4).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild MAX_JOBS=16; M=$PWD
S=$(date +%s); PYTHONPATH=$M python -m convt_op build > $OUT/build.log 2>&1; echo "build rc=$? $(( $(date +%s)-S )) s"
PYTHONPATH=$M OMP_NUM_THREADS=1 timeout -s INT 60 python -m pytest -q -x tests/test_cuda.py -p no:cacheprovider -k "small_images_dispatch or small_images_knob_off or columns_default_dispatch" > $OUT/t.log 2>&1; tail -3 $OUT/t.log
