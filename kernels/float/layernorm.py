"""Layer norm of 2 rows of 16 float32s, a block a row: tree sums for the mean and the variance,
1 / sqrtf(var + eps) (both correctly rounded), scale and shift; the reference does each op in
the kernel's order in float32."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "layernorm"
FEATURES = ["float", "layernorm", "sqrt", "reduction", "shared-memory", "barrier", "multi-block", "multi-warp"]

ROWS, N = 2, 16


def launch():
    rng = np.random.default_rng(3209)
    x = (rng.standard_normal(ROWS * N) * 2 + 0.5).astype(np.float32)
    x[N:] = x[N:] * np.float32(1e-3)           # a row with a tiny variance: eps matters
    gamma = (1 + rng.standard_normal(N) / 10).astype(np.float32)
    beta = (rng.standard_normal(N) / 10).astype(np.float32)
    return (ROWS,), (N,), [x, gamma, beta, np.zeros(ROWS * N, np.float32), f32(1e-5)]


def tree_sum(values):
    s = list(values)
    stride = len(s) // 2
    while stride:
        for t in range(stride):
            s[t] = s[t] + s[t + stride]
        stride //= 2
    return s[0]


def reference(x, gamma, beta, y, eps):
    out = []
    sixteen, one = f32(16), f32(1)
    for r in range(ROWS):
        row = x[r * N:(r + 1) * N]
        mean = tree_sum(row) / sixteen
        d = [v - mean for v in row]
        inv = one / np.sqrt(tree_sum([e * e for e in d]) / sixteen + eps)
        out += [d[t] * inv * gamma[t] + beta[t] for t in range(N)]
    return [x, gamma, beta, np.array(out, np.float32), None]
