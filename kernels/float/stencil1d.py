"""A 3-point float stencil over 40 values on 3 blocks of 16 (the last partial), shared memory
with a one-element halo, clamped ends; the reference rounds every product and sum in the
kernel's order."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "stencil1d"
FEATURES = ["float", "stencil", "shared-memory", "barrier", "multi-block", "partial-block", "halo"]

N, BLOCK = 40, 16


def launch():
    rng = np.random.default_rng(3210)
    x = (rng.standard_normal(N) * 10).astype(np.float32)
    x[7] = 2.0**-140                     # a subnormal quarter: 2^-142 stays subnormal
    return (3,), (BLOCK,), [x, np.zeros(N, np.float32), np.int32(N)]


def reference(x, out, n):
    q, h = f32(0.25), f32(0.5)
    at = lambda i: x[min(max(i, 0), n - 1)]
    return [x, np.array([q * at(i - 1) + h * at(i) + q * at(i + 1) for i in range(n)], np.float32), None]
