"""6x6 float32 matmul on a 2x2 grid of 4x4 blocks (2-D, edge blocks partial, early return): each
element a left-to-right sum of rounded products, as the kernel adds them."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "fmatmul"
FEATURES = ["float", "matmul", "2d-block", "multi-block", "partial-block", "early-return"]

N = 6


def launch():
    rng = np.random.default_rng(3205)
    a = (rng.standard_normal(N * N) * 4).astype(np.float32)
    b = (rng.standard_normal(N * N) / 3).astype(np.float32)
    return (2, 2), (4, 4), [a, b, np.zeros(N * N, np.float32), np.int32(N)]


def reference(a, b, c, n):
    out = np.zeros(n * n, np.float32)
    for r in range(n):
        for col in range(n):
            s = f32(0)
            for k in range(n):
                s = s + a[r * n + k] * b[k * n + col]
            out[r * n + col] = s
    return [a, b, out, None]
