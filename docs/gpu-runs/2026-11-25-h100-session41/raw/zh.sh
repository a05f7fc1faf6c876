unset CXX CC; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0a
for i in 6 7 8 9 10 11; do timeout 60 python scratch/tma/tma_probe.py $i 2>&1 | tail -1 | cut -c1-150; done
