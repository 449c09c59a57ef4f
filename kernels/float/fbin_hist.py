"""Floor binning into an integer histogram on 4 blocks of 16 over 56 elements (the last
partial): t = (x - lo) * inv_width, each op rounded to nearest (lo = -1.2 and 1/0.4 = 2.5
are not exact in binary, so both round), the bin __float2int_rd(t) and floorf(t), integer
atomicAdd into a shared histogram (8 bins, underflow, overflow, NaN) then into the global
one. Edges: values on the bin edges -1.2 + 0.4k and a float32 step either side (where t
rounds onto or off an integer), +-0 and +-subnormals (absorbed by the subtraction), values
that saturate the conversion (+-huge, +-inf: INT_MAX / INT_MIN) where floorf keeps them,
and NaNs with payloads (bin 0 from the conversion, counted in the NaN slot)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import canon, f32, from_bits, rint, to_int  # noqa: E402

KERNEL = "fbin_hist"
FEATURES = ["float", "histogram", "binning", "float-to-int", "rounding-modes", "saturation", "atomics",
            "shared-memory", "barrier", "multi-block", "multi-warp", "partial-block", "nan", "inf", "subnormal",
            "signed-zero"]

N, NB = 56, 8
LO, INV_WIDTH = f32(-1.2), f32(2.5)          # bins of width 0.4 from -1.2: [-1.2, 2.0)


def launch():
    rng = np.random.default_rng(3306)
    x = rng.uniform(-1.6, 2.8, N).astype(np.float32)
    up, down = (lambda v: np.nextafter(f32(v), f32(np.inf))), (lambda v: np.nextafter(f32(v), f32(-np.inf)))
    x[:24] = [-1.2, down(-1.2), up(-1.2), -0.4, down(-0.4), up(-0.4), 0.8, down(0.8), 2.0, down(2.0), up(2.0),
              0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1e9, -1e9, np.inf, -np.inf, 0.0, 0.0, 1.2]
    x[21] = from_bits(0x7FC0_0ABC)
    x[22] = from_bits(0xFF80_0001)
    x[40] = from_bits(0x7FFF_FFFF)
    return (4,), (16,), [x, np.full(N, -7, np.int32), np.zeros(N, np.float32), np.zeros(NB + 3, np.int32), LO,
                         INV_WIDTH, np.int32(N)]


def reference(x, bins, floors, hist, lo, inv_width, n):
    bins, floors, hist = bins.copy(), floors.copy(), hist.copy()
    for i in range(n):
        v = x[i]
        with np.errstate(all="ignore"):
            s = canon((v - lo) * inv_width)
        b = to_int(s, "rm")
        bins[i] = b
        floors[i] = rint(s, "rm")
        slot = NB + 2 if np.isnan(v) else NB if b < 0 else NB + 1 if b >= NB else b
        hist[slot] += 1
    return [x, bins, floors, hist, None, None, None]
