"""sqrtf, fabsf, negation, fminf, fmaxf, copysignf, fmodf and division on 24 (x, y) pairs
(2 blocks of 12): NaN results are CUDA's canonical 0x7FFFFFFF (abs and neg are arithmetic on a
GPU), copysignf moves the sign bit (y may be a NaN; a NaN x is left out, its bits differ by
front end: fmathfns.cu), fminf/fmaxf take the non-NaN operand and
order -0 < +0, fmodf is exact (the library's approximate quotient is corrected), sqrt and
division are correctly rounded. The reference: NumPy float32 and exact rules, no interpreter."""
import math

import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import canon, f32, fmax, fmin, from_bits  # noqa: E402

KERNEL = "fmathfns"
FEATURES = ["float", "math", "sqrt", "fmod", "minmax", "copysign", "nan", "inf", "subnormal", "signed-zero",
            "multi-block", "early-return"]

N = 24
PAYLOAD_NAN = 0x7FC0_0ABC
NEG_NAN = 0xFFC0_0001


def launch():
    rng = np.random.default_rng(3217)
    a = (rng.standard_normal(N) * 50).astype(np.float32)
    b = (rng.standard_normal(N) * 3).astype(np.float32)
    edges = [(0.0, -0.0), (-0.0, 0.0), (np.inf, 2.0), (-np.inf, np.inf), (5.0, 0.0), (-7.5, np.inf),
             (1e-40, 3e-41), (-2.0, -0.0), (1e30, 3.0), (100.0, 0.1), (-12.0, 4.0), (2.0**-149, 1.0)]
    for k, (x, y) in enumerate(edges):
        a[k], b[k] = x, y
    a[12], b[12] = from_bits(PAYLOAD_NAN), 1.5       # NaN x
    a[13], b[13] = -3.0, from_bits(NEG_NAN)           # NaN y
    a[14], b[14] = from_bits(NEG_NAN), from_bits(PAYLOAD_NAN)
    return (2,), (12,), [a, b, np.zeros(8 * N, np.float32), np.int32(N)]


def fmodf(x, y):
    if np.isnan(x) or np.isnan(y) or np.isinf(x) or y == 0:
        return from_bits(0x7FFF_FFFF)
    if np.isinf(y):
        return x
    return f32(math.fmod(float(x), float(y)))     # exact: fmod's result is representable


def reference(a, b, out, n):
    r = []
    with np.errstate(all="ignore"):
        for x, y in zip(a, b):
            r += [canon(np.sqrt(x)), canon(np.abs(x)), canon(-x), fmin(x, y), fmax(x, y),
                  f32(0) if np.isnan(x) else np.copysign(x, y), fmodf(x, y), canon(x / y)]
    return [a, b, np.array(r, np.float32), None]
