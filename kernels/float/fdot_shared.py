"""Float dot product of 200 elements on 4 blocks of 16: grid-stride products and sums, then a
shared-memory tree reduction per block; the reference adds in exactly the same order."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "fdot_shared"
FEATURES = ["float", "dot-product", "grid-stride", "reduction", "shared-memory", "barrier", "multi-block",
            "data-dependent-loop"]

N, GRID, BLOCK = 200, 4, 16


def launch():
    rng = np.random.default_rng(3203)
    a = rng.standard_normal(N).astype(np.float32)
    b = (rng.standard_normal(N) * 3).astype(np.float32)
    partial = np.full(GRID, -1, np.float32)
    return (GRID,), (BLOCK,), [a, b, partial, np.int32(N)]


def reference(a, b, partial, n):
    out = []
    for block in range(GRID):
        cache = []
        for tid in range(BLOCK):
            s = f32(0)
            for i in range(block * BLOCK + tid, n, BLOCK * GRID):
                s = s + a[i] * b[i]
            cache.append(s)
        stride = BLOCK // 2
        while stride:
            for tid in range(stride):
                cache[tid] = cache[tid] + cache[tid + stride]
            stride //= 2
        out.append(cache[0])
    return [a, b, np.array(out, np.float32), None]
