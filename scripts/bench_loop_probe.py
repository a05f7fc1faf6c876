"""The benchmark's timing loop for training steps (grads cleared, L2 flush, CUDA events around
each call, as do_bench) with the host time of each call beside its event time: whether a row
is host-bound, and how far the host's speed drifts between rounds (three rounds per side,
interleaved). Medians with the 10th-90th percentile range, us.

usage (GPU machine, repository root): python scripts/bench_loop_probe.py shape:dtype:layout ...
  shape: a suite name (convt_op/bench_suite.json); dtype: float32 | bfloat16 | float16;
  layout: nchw | channels_last. float32 runs with TF32 on, as the benchmark.
"""
import sys, time, statistics as st, torch, torch.nn.functional as F
import convt_op, convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
def probe(fn, leaves, n=200):
    for _ in range(30):
        for t in leaves: t.grad = None
        fn()
    torch.cuda.synchronize()
    S = [torch.cuda.Event(enable_timing=True) for _ in range(n)]; E = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    F0 = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    host = []
    for i in range(n):
        for t in leaves: t.grad = None
        F0[i].record(); flush.zero_()
        S[i].record(); h0 = time.perf_counter(); fn(); h1 = time.perf_counter(); E[i].record()
        host.append((h1 - h0) * 1e6)
    torch.cuda.synchronize()
    gpu = [s.elapsed_time(e) * 1e3 for s, e in zip(S, E)]
    fl = [a.elapsed_time(b) * 1e3 for a, b in zip(F0, S)]
    q = lambda v: f"{st.median(v):6.0f} [{sorted(v)[n//10]:4.0f}-{sorted(v)[9*n//10]:4.0f}]"
    return f"event {q(gpu)}  host {q(host)}  flush {q(fl)}"
for spec in sys.argv[1:]:
    name, dt, lay = spec.split(":")
    s = shapes[name]; kw = s.conv_kwargs()
    cfg = B.Config(dt, lay, "fwdbwd", True if dt == "float32" else None)
    with B.tf32_enabled(dt == "float32"):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
        fns = {"ours": lambda: convt_op.conv_transpose2d(x, w, b, **kw).backward(go),
               "pytorch": lambda: F.conv_transpose2d(x, w, b, **kw).backward(go)}
        for r in range(3):
            for who in (("ours", "pytorch") if r % 2 == 0 else ("pytorch", "ours")):
                print(f"{spec:40s} {who:8s} {probe(fns[who], leaves)}")
        for t in leaves: t.grad = None; t.requires_grad_(False)
