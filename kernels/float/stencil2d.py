"""A 5-point Jacobi step on an 8x8 float32 grid with 2-D blocks (2x2 of 4x4 threads): border
copied, interior 0.2f * (c + n + s + w + e) in that order, each op rounded."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "stencil2d"
FEATURES = ["float", "stencil", "2d-block", "multi-block", "divergence"]

W = H = 8


def launch():
    rng = np.random.default_rng(3211)
    u = rng.uniform(-100, 100, W * H).astype(np.float32)
    return (2, 2), (4, 4), [u, np.zeros(W * H, np.float32), np.int32(W), np.int32(H)]


def reference(u, v, w, h):
    out = u.copy()
    for y in range(1, h - 1):
        for x in range(1, w - 1):
            i = y * w + x
            out[i] = f32(0.2) * ((((u[i] + u[i - w]) + u[i + w]) + u[i - 1]) + u[i + 1])
    return [u, out, None, None]
