# Run RH: build HEAD (final tree); tests/test_cuda.py whole (5 shards); racecheck of the kNchw smoke; host trace of two host-bound training rows.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s)
for k in 0 1 2 3 4; do OMP_NUM_THREADS=3 timeout -s INT 250 python -m pytest -q -rf tests/test_cuda.py -p no:cacheprovider --shard $k/5 > $R/test_$k.log 2>&1 & done
wait; echo "tests in $(( $(date +%s)-S )) s"; for k in 0 1 2 3 4; do tail -1 $R/test_$k.log; done; grep -h "^FAILED\|^ERROR" $R/test_*.log | cut -c1-300 | head -20
S=$(date +%s)
timeout 90 compute-sanitizer --tool racecheck python scratch/lead/ks_nchw_smoke.py > $R/race.txt 2>&1; echo "racecheck rc=$? $(( $(date +%s)-S )) s"; tail -2 $R/race.txt
for row in dcgan_g2:bfloat16:channels_last:fwdbwd dcgan_g4:bfloat16:channels_last:fwdbwd; do CONVT_HOST_TRACE=1 timeout 40 python scratch/lead/hosttrace.py $row > $R/host_$row.txt 2>&1; done
echo "host $(( $(date +%s)-S )) s"
cd $OUT && tar czf logs.tgz r && rm -rf r
