"""Repeat warp-specialized forward launches many times to catch intermittent hangs or wrong
results (the mbarrier protocols of forward_wgmma_ws.cu and forward_kernel_stride.cu).

usage (GPU machine, repository root): timeout 300 python scripts/hang_stress.py [REPS] [spec ...]
  spec: N:Cin:Cout:H:W:K:S:dtype (channels_last, padding 0; default: the shapes that hung in
  runs MC-MG and a few ws-kernel shapes with few chunks per item). Each spec runs REPS launches
  (default 1000) with a synchronize every 50, printing progress; a hang shows as the last
  "started" line with no "done" after it (run it under `timeout`). Every 100th result is
  compared with float64 PyTorch. Exit 1 on a wrong result.
"""
import sys
import time

import torch
import torch.nn.functional as F

import convt_op

DEFAULT = [
    # unet_up1's channels (hung with 2 input buffers x 4 stages in MF, MG) on rows under 64
    # pixels, which the kernel == stride forward takes (wider rows stay with cuBLAS since run NC)
    "32:128:64:128:32:2:2:bfloat16",
    "28:128:64:128:32:2:2:float16",
    "32:128:64:128:32:2:2:float32",
    "512:256:256:14:14:2:2:bfloat16",  # maskrcnn_mask
    "16:16:64:128:128:3:1:bfloat16",  # ws forward, 1 chunk per item (the turn hazard's case)
    "16:8:64:128:128:3:1:float32",  # the same in TF32 (8 channels a chunk)
]


def main() -> int:
    args = sys.argv[1:]
    reps = int(args.pop(0)) if args and args[0].isdigit() else 1000
    specs = args or DEFAULT
    bad = 0
    for spec in specs:
        n, cin, cout, h, w, k, s, dt = spec.split(":")
        n, cin, cout, h, w, k, s = map(int, (n, cin, cout, h, w, k, s))
        dtype = getattr(torch, dt)
        gen = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(n, cin, h, w, device="cuda", dtype=dtype, generator=gen)
        x = x.contiguous(memory_format=torch.channels_last)
        wt = torch.randn(cin, cout, k, k, device="cuda", dtype=dtype, generator=gen) / (cin * k * k) ** 0.5
        b = torch.randn(cout, device="cuda", dtype=dtype, generator=gen)
        ref = F.conv_transpose2d(x.double(), wt.double(), b.double(), stride=s)
        tol = 2e-2 if dtype != torch.float32 else 5e-3
        print(f"{spec}: started, {reps} launches", flush=True)
        t0 = time.time()
        for i in range(reps):
            y = convt_op.conv_transpose2d(x, wt, b, stride=s)
            if i % 100 == 0:
                err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
                if not err <= tol:
                    print(f"{spec}: launch {i}: relative error {err:.2e} > {tol}", flush=True)
                    bad += 1
                    break
            if i % 50 == 49:
                torch.cuda.synchronize()
                if i % 250 == 249:
                    print(f"{spec}: {i + 1} launches", flush=True)
        torch.cuda.synchronize()
        print(f"{spec}: done, {reps} launches in {time.time() - t0:.1f} s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
