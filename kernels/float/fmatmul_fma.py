"""8x8 float32 matmul in 4x4 shared-memory tiles with fmaf accumulation (fma.rn.f32: a*b+acc
rounded once): the reference rounds each exact fma step to float32 (_fref.fma)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32, fma  # noqa: E402

KERNEL = "fmatmul_fma"
FEATURES = ["float", "fma", "matmul", "shared-memory", "barrier", "2d-block", "multi-block", "tiled"]

N, TILE = 8, 4


def launch():
    rng = np.random.default_rng(3206)
    a = (rng.standard_normal(N * N) * 2).astype(np.float32)
    b = (rng.standard_normal(N * N) * 5).astype(np.float32)
    return (2, 2), (TILE, TILE), [a, b, np.zeros(N * N, np.float32), np.int32(N)]


def reference(a, b, c, n):
    out = np.zeros(n * n, np.float32)
    for r in range(n):
        for col in range(n):
            acc = f32(0)
            for k in range(n):                 # tile by tile, k within the tile: k in order
                acc = fma(a[r * n + k], b[k * n + col], acc)
            out[r * n + col] = acc
    return [a, b, out, None]
