"""Float dot product by warp shuffles: __shfl_down_sync on floats within each 4-lane warp, the
warp sums through shared memory, warp 0 reduces them; 3 blocks of 16 over 44 elements (the
last block partial). Inputs include a NaN-free mix of magnitudes so the order matters."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "fdot_shfl"
FEATURES = ["float", "dot-product", "shuffle-down", "reduction", "shared-memory", "barrier", "multi-block",
            "multi-warp", "partial-block"]

N, GRID, BLOCK, WARP = 44, 3, 16, 4


def launch():
    rng = np.random.default_rng(3204)
    a = (rng.standard_normal(N) * np.float32(2.0) ** rng.integers(-8, 9, N)).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    partial = np.zeros(GRID, np.float32)
    return (GRID,), (BLOCK,), [a, b, partial, np.int32(N)]


def warp_sum(v):
    """v (4 lanes) after v += shfl_down(v, 2); v += shfl_down(v, 1): lane 0's sum. A lane whose
    source is past the warp reads its own value (the result there is unused by lane 0)."""
    for delta in (2, 1):
        v = [v[l] + (v[l + delta] if l + delta < WARP else v[l]) for l in range(WARP)]
    return v[0]


def reference(a, b, partial, n):
    out = []
    for block in range(GRID):
        v = [a[i] * b[i] if i < n else f32(0) for i in range(block * BLOCK, block * BLOCK + BLOCK)]
        sums = [warp_sum(v[w * WARP:(w + 1) * WARP]) for w in range(BLOCK // WARP)]
        out.append(warp_sum(sums + [f32(0)] * (WARP - len(sums))))
    return [a, b, np.array(out, np.float32), None]
