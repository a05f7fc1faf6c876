# Run VE: main (code of 0a09812): every test file but tests/test_cuda.py (8 shards at once); then the host split of two small training rows in three fresh processes each (how much the host time moves between processes).
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
FILES=$(ls tests/test_*.py | grep -v "tests/test_cuda.py")
for j in 0 1 2 3 4 5 6 7; do OMP_NUM_THREADS=2 timeout -s INT 330 python -m pytest -q -rf $FILES -p no:cacheprovider --shard $j/8 > $R/other_${j}_of_8.log 2>&1 & done; wait
echo "other files $(( $(date +%s)-S )) s"; for f in $R/other_*_of_8.log; do echo "$(basename $f): $(tail -1 $f)"; grep FAILED $f | head -3; done; S=$(date +%s)
for p in 1 2 3; do timeout 40 python scratch/lead/host_api.py dcgan_g2:float32:nchw dcgan_g2:bfloat16:channels_last 2>/dev/null | grep "^## " > $R/host_split_p$p.txt; done
echo "host splits $(( $(date +%s)-S )) s"; cat $R/host_split_p*.txt; cp $R/host_split_p*.txt $OUT/
cd $OUT && tar czf logs.tgz r && rm -rf r
