"""The demo's dot product in float32: [1.5, 2, 3] . [4, 5, 6.25] = 34.75, one 4-thread block,
shared memory and a barrier (the float twin of kernels/dot)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "fdot"
FEATURES = ["float", "dot-product", "shared-memory", "barrier", "demo"]


def launch():
    a = np.array([1.5, 2, 3], dtype=np.float32)
    b = np.array([4, 5, 6.25], dtype=np.float32)
    out = np.zeros(1, dtype=np.float32)
    return (1,), (4,), [a, b, out, np.int32(3)]


def reference(a, b, out, n):
    prod = [a[t] * b[t] if t < n else f32(0) for t in range(4)]
    return [a, b, np.array([((prod[0] + prod[1]) + prod[2]) + prod[3]], np.float32), None]
