"""4 blocks of 16 threads over n = 37 elements: block 2 is partly active and
block 3 idle; words past n keep their sentinel."""
import numpy as np

KERNEL = "partial_block"
FEATURES = ["partial-block", "multi-block", "multi-warp", "elementwise"]

N = 37


def launch():
    rng = np.random.default_rng(309)
    x = rng.integers(-10**5, 10**5, 64, dtype=np.int64).astype(np.int32)
    return (4,), (16,), [x, np.full(64, -99, np.int32), np.int32(N)]


def reference(x, out, n):
    out = out.copy()
    i = np.arange(n)
    out[:n] = x[:n] * (i // 16) - i
    return [x, out, None]
