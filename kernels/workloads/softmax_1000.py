"""Numerically stable softmax of 1,000 float32s in one block of 16 threads: block-strided loops
(thread t takes t, t + 16, ...), a per-thread fmaxf then a shared tree for the maximum, e =
expf(x - max) stored in y and summed per thread in index order, a shared tree for the sum,
then y / sum. x at global words 0-999, y at 1000-1999. The reference does every float32
operation in the kernel's order: expf is the math library's sequence as kernels/float/_fref.py
writes it out op by op (range reduction in fma steps around ex2.approx.ftz, as kernels/float/
softmax does), the sums and the division in NumPy float32."""
import sys
from pathlib import Path

import numpy as np

FLOAT_DIR = str(Path(__file__).resolve().parent.parent / "float")
if FLOAT_DIR not in sys.path:      # _fref.py, the float suite's shared host references
    sys.path.insert(0, FLOAT_DIR)
from _fref import expf, f32, fmax  # noqa: E402

KERNEL = "softmax_1000"
FEATURES = ["workload", "float", "softmax", "expf", "approx", "reduction", "shared-memory", "barrier",
            "loop", "multi-warp", "large-memory"]

N, THREADS = 1000, 16


def launch():
    rng = np.random.default_rng(9107)
    x = (rng.standard_normal(N) * 2).astype(np.float32)
    x[17] = 9.0                           # the maximum (the rest is below 7)
    x[400] = x[401] = -91.5               # expf(-100.5): a subnormal result (2^j scales it after ex2)
    x[999] = -1e30                        # expf(x - max) underflows to +0
    return (1,), (THREADS,), [x, np.zeros(N, np.float32), np.int32(N)]


def tree(values, op):
    s = list(values)
    stride = THREADS // 2
    while stride:
        for t in range(stride):
            s[t] = op(s[t], s[t + stride])
        stride //= 2
    return s[0]


def reference(x, y, n):
    partial = []
    for t in range(THREADS):
        m = f32(-np.inf)
        for i in range(t, n, THREADS):
            m = fmax(m, x[i])
        partial.append(m)
    m = tree(partial, fmax)
    e = np.array([expf(x[i] - m) for i in range(n)], np.float32)
    partial = []
    for t in range(THREADS):
        s = f32(0.0)
        for i in range(t, n, THREADS):
            s = s + e[i]
        partial.append(s)
    total = tree(partial, lambda p, q: p + q)
    return [x, e / total, None]
