import os, sys, torch
from torch.utils.cpp_extension import load
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../csrc"))
mod = load("tma_probe", [os.path.join(os.path.dirname(__file__), "tma_probe.cu")], extra_include_paths=[root],
           extra_cuda_cflags=["-gencode=arch=compute_90a,code=sm_90a", "-DCONVT_WITH_CUDA", "-std=c++17"], verbose=False)
x = torch.randn(2, 32, 20, 36, device="cuda")
cases = [([40, 8, 8, 1], [-2, -1, 0, 0]), ([40, 8, 8, 1], [0, 0, 0, 0]), ([36, 8, 8, 1], [0, 0, 0, 0]),
         ([32, 8, 8, 1], [0, 0, 0, 0]), ([8, 8, 8, 1], [0, 0, 0, 0]), ([40, 8, 8, 1], [0, 0, 8, 1]),
         ([40, 8, 8, 1], [1, 0, 0, 0]), ([40, 8, 8, 1], [4, 0, 0, 0]), ([40, 8, 8, 1], [-4, 0, 0, 0]),
         ([40, 8, 8, 1], [0, -1, 0, 0]), ([40, 8, 8, 1], [-1, 0, 0, 0]), ([40, 8, 8, 1], [2, 3, 0, 0])]
which = int(sys.argv[1])
box, c = cases[which]
y = mod.run(x, box, c, 0)
torch.cuda.synchronize()
ref = torch.zeros(box[3], box[2], box[1], box[0], device="cuda")
for n in range(box[3]):
    for ch in range(box[2]):
        for yy in range(box[1]):
            for xx in range(box[0]):
                gx, gy, gc, gn = c[0] + xx, c[1] + yy, c[2] + ch, c[3] + n
                if 0 <= gx < 36 and 0 <= gy < 20 and gc < 32 and gn < 2:
                    ref[n, ch, yy, xx] = x[gn, gc, gy, gx]
print(which, box, c, "ok" if torch.equal(y.view_as(ref), ref) else "MISMATCH")
