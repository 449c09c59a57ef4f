"""Rotate left and right by runtime amounts 0..40 (taken mod 32)."""
import numpy as np

KERNEL = "rotate_bits"
FEATURES = ["bitops", "elementwise", "multi-block"]


def launch():
    rng = np.random.default_rng(312)
    n = 41
    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x[:3] = [0x80000001, 1, 0xFFFFFFFE]
    k = rng.permutation(n).astype(np.int32)    # every amount 0..40 once
    return (3,), (16,), [x, k, np.zeros(2 * n, np.uint32), np.int32(n)]


def _rotl(v, s):
    bits = f"{v:032b}"
    return int(bits[s:] + bits[:s], 2)


def reference(x, k, out, n):
    rows = [[_rotl(int(v), s % 32), _rotl(int(v), (32 - s % 32) % 32)] for v, s in zip(x, k)]
    return [x, k, np.array(rows, np.uint32).ravel(), None]
