# TF32 operand rounding (+0x1000, then the MMA drops 13 bits) against truncation (the MMA alone), for a grad_weight-like
# reduction x^T go over K pixels in float64 accumulation: relative error (Frobenius) against the unquantized product.
import numpy as np
rng = np.random.default_rng(0)
def tf32(a, rnd):
    b = a.astype(np.float32).view(np.uint32)
    if rnd: b = b + np.uint32(0x1000)
    return (b & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
for K in (1 << 14, 1 << 17, 1 << 20):
    for dist in ("normal", "relu-like"):
        x = rng.standard_normal((K, 64)); go = rng.standard_normal((K, 64))
        if dist == "relu-like": x = np.maximum(x, 0)  # non-negative activations: a mean of x*go per column not zero
        ref = x.astype(np.float32).astype(np.float64).T @ go.astype(np.float32).astype(np.float64)
        r = tf32(x, True).T @ tf32(go, True); t = tf32(x, False).T @ tf32(go, False)
        e = lambda a: np.linalg.norm(a - ref) / np.linalg.norm(ref)
        # per element relative error, in units of |ref| (the scale bias shows in the mean of (t - ref) / ref)
        print(f"K={K:8d} {dist:9s} rounded {e(r):.2e}  truncated {e(t):.2e}  trunc mean (t-ref)/ref {np.mean((t - ref) / ref):+.2e}")
