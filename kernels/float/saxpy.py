"""saxpy y = a*x + y in float32 on 4 blocks of 12 threads: a rounded product then a rounded sum
(never fused), with edge inputs: signed zeros, subnormals, overflow to inf, inf - inf and a NaN
(CUDA's canonical NaN 0x7FFFFFFF comes out)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import canon, f32, from_bits  # noqa: E402

KERNEL = "saxpy"
FEATURES = ["float", "elementwise", "multi-block", "multi-warp", "partial-block", "subnormal", "nan", "inf"]


def launch():
    rng = np.random.default_rng(3201)
    n = 45
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    y = (rng.standard_normal(n) * 100).astype(np.float32)
    edge_x = [0.0, -0.0, 1e-40, 3e38, 3e38, np.inf, np.nan, 1.0, 2.0**-75]
    edge_y = [-0.0, -0.0, 0.0, 3e38, np.inf, 1.0, 1.0, np.inf, 2.0**-149]
    x[:9], y[:9] = edge_x, edge_y
    x[9] = from_bits(0x7FC0_1234)        # a NaN with a payload: the result is still canonical
    return (4,), (12,), [np.int32(n), f32(-1.75), x, y]


def reference(n, a, x, y):
    with np.errstate(all="ignore"):
        out = [a * x[i] + y[i] for i in range(n)]      # np.float32: mul.rn, then add.rn
    return [None, None, x, canon(np.array(out, np.float32))]
