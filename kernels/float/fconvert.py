"""Float <-> integer conversions in all four rounding modes and the rounding functions, on
2 blocks of 12 threads over 20 edge inputs: halves (ties), -0, subnormals, values past the
int and unsigned ranges (saturation), infinities and NaN (0); integers above 2^24 (rounded
to float32 in each mode). The reference rounds exactly (fractions) by the documented rules."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import MODES, from_int, rint, to_int  # noqa: E402

KERNEL = "fconvert"
FEATURES = ["float", "conversion", "rounding-modes", "saturation", "nan", "inf", "subnormal", "multi-block",
            "partial-block", "early-return"]

N = 20
ROUND_FNS = ("rm", "rp", "rz", "half-away", "rn")     # floorf, ceilf, truncf, roundf, rintf


def launch():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 1e-40, -1e-40, 2.7, -2.7, 8388609.0,
                  2147483648.0, -2147483904.0, 4294967296.0, 3e9, np.inf, -np.inf, np.nan, -3.4e38],
                 np.float32)
    iv = np.array([0, 1, -1, 16777217, -16777217, 16777219, 2**31 - 1, -2**31, 33554435, -33554435,
                   123456789, -123456789, 7, -7, 2**30 + 1, -(2**30 + 65), 2**24, 2**25 + 2, -3, 1000000001],
                  np.int32)
    uv = np.array([0, 1, 2**32 - 1, 2**31, 2**31 + 1, 16777217, 16777219, 2**24 + 3, 4294967040, 4294967168,
                   4294967167, 3, 2**31 + 128, 2**31 + 129, 2**31 + 384, 5, 99999999, 2**28 + 17, 2**27 + 9, 65537],
                  np.uint32)
    return (2,), (12,), [x, iv, uv, np.zeros(4 * N, np.int32), np.zeros(4 * N, np.uint32),
                         np.zeros(5 * N, np.float32), np.zeros(8 * N, np.float32), np.int32(N)]


def roundf(v):
    """roundf: to the nearest integral value, halves away from zero (exactly: no double rounding)."""
    if not np.isfinite(v):
        return rint(v, "rn")
    t = rint(np.abs(v), "rz")
    return np.copysign(t + np.float32(1) if np.abs(v) - t >= np.float32(0.5) else t, v).astype(np.float32)


def reference(x, iv, uv, f2i, f2u, rnd, i2f, n):
    ints = [to_int(v, m) for v in x for m in MODES]
    uints = [to_int(v, m, signed=False) for v in x for m in MODES]
    rounded = [roundf(v) if m == "half-away" else rint(v, m) for v in x for m in ROUND_FNS]
    floats = [from_int(int(i) if k < 4 else int(u), MODES[k % 4]) for i, u in zip(iv, uv) for k in range(8)]
    return [x, iv, uv, np.array(ints, np.int32), np.array(uints, np.uint32), np.array(rounded, np.float32),
            np.array(floats, np.float32), None]
