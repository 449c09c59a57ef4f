"""Block-wide inclusive float scan by __shfl_up_sync on floats (2 blocks of 16 over 30 values,
each block scanned on its own): warp scans, warp totals scanned by warp 0, then added; the
reference follows the same additions."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "fscan_shfl"
FEATURES = ["float", "scan", "shuffle-up", "shared-memory", "barrier", "multi-block", "multi-warp",
            "partial-block"]

N, BLOCK, WARP = 30, 16, 4


def launch():
    rng = np.random.default_rng(3214)
    x = (rng.standard_normal(N) * np.float32(4.0) ** rng.integers(-4, 5, N)).astype(np.float32)
    return (2,), (BLOCK,), [x, np.full(N, -1, np.float32), np.int32(N)]


def warp_scan(v):
    offset = 1
    while offset < WARP:
        v = [v[l] + v[l - offset] if l >= offset else v[l] for l in range(WARP)]
        offset *= 2
    return v


def reference(x, out, n):
    result = []
    for block in range(2):
        vals = [x[i] if i < n else f32(0) for i in range(block * BLOCK, (block + 1) * BLOCK)]
        scanned = [warp_scan(vals[w * WARP:(w + 1) * WARP]) for w in range(BLOCK // WARP)]
        totals = warp_scan([s[-1] for s in scanned])
        for w, s in enumerate(scanned):
            result += [v + totals[w - 1] if w > 0 else v for v in s]
    return [x, np.array(result[:n], np.float32), None]
