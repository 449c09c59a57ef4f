"""Horner's rule for a degree-7 polynomial in each rounding mode (__fmul_rn/rz/rd/ru then
__fadd_*, never fused), coefficients staged in shared memory behind a barrier; 2 blocks of
16 over 28 points: near the polynomial's roots (cancellation: the four modes disagree),
signed zeros, subnormals, values whose powers overflow (inf in rn, FLT_MAX in rz, each
direction its own in rd/ru), +-inf and a NaN with a payload (canonical NaN). The reference
rounds each step exactly (_fref.add/mul)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import MODES, add, from_bits, mul  # noqa: E402

KERNEL = "fhorner"
FEATURES = ["float", "polynomial", "horner", "rounding-modes", "shared-memory", "barrier", "multi-block",
            "multi-warp", "partial-block", "early-return", "nan", "inf", "subnormal", "overflow"]

N = 28
# (x - 1)(x + 2)(x - 0.3)(x^2 + 1)(x^2 - 3x + 3), expanded and rounded to float32: c[0] + c[1] x + ...
COEF = np.polynomial.polynomial.polyfromroots([1, -2, 0.3, 1j, -1j, 1.5 + 0.8660254j, 1.5 - 0.8660254j]).real


def launch():
    rng = np.random.default_rng(3305)
    coef = COEF.astype(np.float32)
    xs = rng.uniform(-2.5, 2.5, N).astype(np.float32)
    xs[:16] = [1.0, 1.0000001, 0.99999994, -2.0, -2.0000002, 0.3, 0.30000004, 0.0,
               -0.0, 1e-40, -2.0**-149, 1e6, -1e6, 1e19, np.inf, -np.inf]
    xs[16] = from_bits(0x7FC0_0777)
    return (2,), (16,), [coef, xs, np.zeros(4 * N, np.float32), np.int32(N)]


def reference(coef, xs, out, n):
    res = []
    for x in xs[:n]:
        for mode in MODES:
            p = coef[7]
            for k in range(6, -1, -1):
                p = add(mul(p, x, mode), coef[k], mode)
            res.append(p)
    return [coef, xs, np.array(res, np.float32), None]
