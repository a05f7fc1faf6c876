# Run ZF: the NCHW-in illegal instruction: compute-sanitizer on small cases.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
S=$(date +%s); python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }; echo "build $(( $(date +%s)-S )) s"
for c in af bb cf; do timeout 60 python scratch/lead/zf_case.py $c 2>&1 | tail -2; done
for c in af bb; do timeout 120 compute-sanitizer --print-limit 5 python scratch/lead/zf_case.py $c > $R/san_$c.txt 2>&1; grep -v "^=========     Host Frame" $R/san_$c.txt | head -30 | cut -c1-200; done
CONVT_FWD_WS_WEIGHTS=stream timeout 60 python scratch/lead/zf_case.py af 2>&1 | tail -1
