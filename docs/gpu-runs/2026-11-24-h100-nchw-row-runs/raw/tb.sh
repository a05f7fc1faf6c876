# Run TB: host time of small training steps: fwd/bwd split behind a spin, C++ host trace, py-spy native samples.
unset CXX CC; export PYTHONUNBUFFERED=1 CONVT_OP_BUILD_DIR=$PWD/.devbuild PYTHONPATH=$PWD:$PWD/scratch/lead; R=$OUT/r; mkdir -p $R
nvidia-smi -L; S=$(date +%s)
python -m convt_op build > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s)-S )) s"; S=$(date +%s); echo "so gz bytes: $(gzip -1 -c .devbuild/*/*.so | wc -c)"
python3 -m pip install -q --no-index --no-deps --target /tmp/spy scratch/lead/whl/*.whl; SPY=/tmp/spy/bin/py-spy
ROWS="dcgan_g2:float32:nchw dcgan_g2:bfloat16:channels_last dcgan_g4:bfloat16:channels_last unet_up4:bfloat16:channels_last dcgan_g4:float32:nchw"
timeout 120 python scratch/lead/hostsplit2.py $ROWS > $R/hostsplit.txt 2>&1; echo "split rc=$? $(( $(date +%s)-S )) s"; S=$(date +%s)
for row in dcgan_g2:float32:nchw dcgan_g2:bfloat16:channels_last; do
  CONVT_HOST_TRACE=1 timeout 60 python scratch/lead/spyloop.py ours $row 3 > $R/trace_${row//:/_}.txt 2>&1
done; echo "trace $(( $(date +%s)-S )) s"; S=$(date +%s)
for who in ours torch; do
  timeout 60 $SPY record --native -r 1000 -d 14 --threads --idle -f raw -o $R/spy_$who.txt -- python scratch/lead/spyloop.py $who dcgan_g2:float32:nchw 8 > $R/spy_$who.log 2>&1; echo "spy $who rc=$?"
done; echo "spy $(( $(date +%s)-S )) s"
cat $R/hostsplit.txt; for f in $R/trace_*.txt; do echo "== $f"; cat $f | cut -c1-150; done; cat $R/spy_*.log | grep -v Warn | tail -8
cd $OUT && tar czf logs.tgz r && rm -rf r
