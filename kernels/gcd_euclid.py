"""gcd by Euclid on unsigned pairs, including zeros, equal values, consecutive
Fibonacci numbers (the longest loops) and values above 2**31."""
import math

import numpy as np

KERNEL = "gcd_euclid"
FEATURES = ["data-dependent-loop", "unsigned-div", "divergence", "multi-block"]


def launch():
    rng = np.random.default_rng(304)
    n = 20
    common = rng.integers(1, 50, n, dtype=np.uint64)
    a = common * rng.integers(0, 1000, n, dtype=np.uint64)
    b = common * rng.integers(0, 1000, n, dtype=np.uint64)
    pairs = [(0, 0), (0, 9), (12, 0), (1597, 987), (2**32 - 2, 2**31 + 2), (7, 7)]
    a[: len(pairs)] = [p for p, _ in pairs]
    b[: len(pairs)] = [q for _, q in pairs]
    return (2,), (12,), [a.astype(np.uint32), b.astype(np.uint32), np.zeros(n, np.uint32), np.int32(n)]


def reference(a, b, g, n):
    return [a, b, np.array([math.gcd(int(x), int(y)) for x, y in zip(a, b)], np.uint32), None]
