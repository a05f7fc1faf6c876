# Run ZG: TMA probe of NCHW boxes (scratch/tma), each case in its own process.
unset CXX CC; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0a
S=$(date +%s); timeout 200 python scratch/tma/tma_probe.py 0 2>&1 | tail -4; echo "build+0 $(( $(date +%s)-S )) s"
for i in 1 2 3 4 5; do timeout 60 python scratch/tma/tma_probe.py $i 2>&1 | tail -1; done
