"""floor(sqrt(x)) by binary search on unsigned x, from 0 to 2**32 - 1, with
perfect squares and their neighbours."""
import math

import numpy as np

KERNEL = "isqrt_bsearch"
FEATURES = ["data-dependent-loop", "unsigned-div", "divergence", "multi-block"]


def launch():
    rng = np.random.default_rng(305)
    n = 24
    x = rng.integers(0, 2**32, n, dtype=np.uint64)
    x[:10] = [0, 1, 2, 3, 4, 15, 16, 65535**2, 65536**2 - 1, 2**32 - 1]
    x[10:14] = rng.integers(0, 1000, 4)
    return (2,), (16,), [x.astype(np.uint32), np.zeros(n, np.uint32), np.int32(n)]


def reference(x, root, n):
    return [x, np.array([math.isqrt(int(v)) for v in x], np.uint32), None]
