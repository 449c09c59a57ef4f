"""Three kinds of early exit: past n, negative input (after a store), zero
input (without one); the surviving threads finish the work."""
import numpy as np

KERNEL = "early_return"
FEATURES = ["early-return", "divergence", "multi-block", "partial-block"]

N = 26


def launch():
    rng = np.random.default_rng(302)
    x = rng.integers(-5, 40, 32, dtype=np.int64).astype(np.int32)
    x[[3, 9, 17]] = 0
    return (3,), (12,), [x, np.full(32, 777, np.int32), np.int32(N)]


def reference(x, out, n):
    out = out.copy()
    for i in range(n):
        if x[i] < 0:
            out[i] = -1
        elif x[i] > 0:
            out[i] = x[i] * x[i] + i
    return [x, out, None]
