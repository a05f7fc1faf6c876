# Call AB5 (warm, after AB4 on the same machine and build): the benchmark of record and strict float32.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD
timeout 330 python -m convt_op bench --configs record --device-time --out $OUT/record > $OUT/record.log 2>&1
timeout 60 python -m convt_op bench --configs float32:nchw:fwd --no-tf32 --out $OUT/strict > $OUT/strict.log 2>&1
