"""Softmax over 16 float32s (one block of 16): tree max by fmaxf, expf(x - max), tree sum,
division. expf is the math library's sequence (libdevice and NVRTC compile it alike): a
range reduction in fma steps (one in .rm) around ex2.approx.ftz, which docs/isa.md defines
as a fixed sequence of fp32 ops. The reference follows both op by op (_fref.expf, exact, no
interpreter); tests/test_float_suite.py also checks _fref.expf against math.exp within 2 ulp
(CUDA documents expf's maximum error as 2 ulp)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import expf, fmax  # noqa: E402

KERNEL = "softmax"
FEATURES = ["float", "softmax", "expf", "approx", "reduction", "shared-memory", "barrier", "multi-warp"]

N = 16


def launch():
    rng = np.random.default_rng(3208)
    x = (rng.standard_normal(N) * 3).astype(np.float32)
    x[5] = -90.0                          # e = expf(x - max): subnormal, and 0 past -104
    x[6] = -120.0
    return (1,), (N,), [x, np.zeros(N, np.float32)]


def tree(values, op):
    s = list(values)
    stride = len(s) // 2
    while stride:
        for t in range(stride):
            s[t] = op(s[t], s[t + stride])
        stride //= 2
    return s[0]


def reference(x, y):
    m = tree(x, fmax)
    e = [expf(v - m) for v in x]
    total = tree(e, lambda p, q: p + q)
    return [x, np.array([v / total for v in e], np.float32)]
