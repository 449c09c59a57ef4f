"""if/else on lane parity with a nested data-dependent if/else on each side,
then a common statement after reconvergence."""
import numpy as np

KERNEL = "nested_divergence"
FEATURES = ["divergence", "nested-divergence", "multi-warp", "multi-block"]


def launch():
    rng = np.random.default_rng(301)
    x = rng.integers(-30, 30, 32, dtype=np.int64).astype(np.int32)
    return (2,), (16,), [x, np.zeros(32, np.int32)]


def reference(x, out):
    out = np.empty(32, np.int32)
    for i, v in enumerate(x.tolist()):
        tid = i % 16
        if tid % 2 == 1:
            r = v * 2 if v > 0 else 1 - v
        else:
            # C truncating division: v % 3 == 0 iff divisible, v / 3 exact then
            r = v // 3 if v % 3 == 0 else v + 100
        out[i] = r + tid
    return [x, out]
