# Call AA4 (warm): the benchmark of record and strict float32 on the checkout.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD; S=$(date +%s)
PYTHONPATH=$PWD python -m convt_op build > /dev/null 2>&1; echo "build $(( $(date +%s)-S )) s"
python -m convt_op bench --configs record --device-time --out $OUT/record > $OUT/record.log 2>&1; echo "record rc=$? $(( $(date +%s)-S )) s"
python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/strict > $OUT/strict.log 2>&1; echo "strict rc=$? $(( $(date +%s)-S )) s"
tail -5 $OUT/record.log; tail -3 $OUT/strict.log
