"""saxpy as fmaf(a, x, y) (fma.rn.f32, one rounding) in a grid-stride loop; the inputs include
cases where the fused result differs from a rounded product then a sum (the reference rounds
the exact a*x+y once)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32, fma  # noqa: E402

KERNEL = "saxpy_fma"
FEATURES = ["float", "fma", "elementwise", "grid-stride", "multi-block", "data-dependent-loop"]


def launch():
    rng = np.random.default_rng(3202)
    n = 50
    a = f32(1.0 + 2.0**-12)
    x = (rng.standard_normal(n) * 8).astype(np.float32)
    y = (-x.astype(np.float64) * float(a)).astype(np.float32)   # y close to -a*x: cancellation
    y[::3] = (rng.standard_normal(len(y[::3])) * 8).astype(np.float32)
    x[:3], y[:3] = [1.0 + 2.0**-12, 2.0**-70, -0.0], [-1.0, 2.0**-149, 0.0]
    return (2,), (8,), [np.int32(n), a, x, y]


def reference(n, a, x, y):
    return [None, None, x, np.array([fma(a, x[i], y[i]) for i in range(n)], np.float32)]
