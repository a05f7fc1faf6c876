"""One call of each case named in argv (shape:dtype:layout:mode, the benchmark's inputs and calls; mode fwd,
grad_input, grad_weight or fwdbwd; float32 with TF32 on, as the benchmark), between cudaProfilerStart / Stop, for
`ncu --profile-from-start off`: every kernel of that call is profiled, none of the warm-up. WHO=pytorch profiles
PyTorch's call instead of ours."""
import os, sys, torch
import convt_op, convt_op.bench as B
shapes = {s.name: s for s in B.load_suite()}
op = convt_op.conv_transpose2d
for spec in sys.argv[1:]:
    name, dt, lay, mode = spec.split(":")
    s = shapes[name]
    cfg = B.Config(dt, lay, mode, True if dt == "float32" else None)
    with B.tf32_enabled(True):
        x, w, b, go = B.make_inputs(s, cfg, 0)
        ours, theirs, leaves, context = B._case_fns(op, s, cfg, x, w, b, go)
        fn = theirs if os.environ.get("WHO") == "pytorch" else ours
        with context():
            for _ in range(3):
                if leaves:
                    for t in leaves: t.grad = None
                fn()
            torch.cuda.synchronize()
            if leaves:
                for t in leaves: t.grad = None
            torch.cuda.profiler.start()
            fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
    print(spec, "done", flush=True)
