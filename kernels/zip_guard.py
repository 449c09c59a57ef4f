"""GPU-Puzzles zip with a guard: a 16-thread block over 11 elements; the output
words past `size` keep their sentinel."""
import numpy as np

KERNEL = "zip_guard"
FEATURES = ["elementwise", "divergence", "partial-block"]


def launch():
    rng = np.random.default_rng(103)
    a = rng.integers(-1000, 1000, 16, dtype=np.int64).astype(np.int32)
    b = rng.integers(-1000, 1000, 16, dtype=np.int64).astype(np.int32)
    out = np.full(16, 12345, dtype=np.int32)
    return (1,), (16,), [a, b, out, np.int32(11)]


def reference(a, b, out, size):
    out = out.copy()
    out[:size] = a[:size] + 10 * b[:size]
    return [a, b, out, None]
