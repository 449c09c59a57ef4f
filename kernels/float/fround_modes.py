"""The directed-rounding intrinsics (__fadd_rz, __fmul_rd, __fdiv_ru, __fmaf_rz, __fsqrt_rd,
__frcp_ru, ...: 7 operations x 4 modes) on 12 triples, 2 blocks of 8 (the second partial):
inexact results, overflow (inf or FLT_MAX by mode), subnormal results, exact zeros (-0 in rd),
negative square roots (NaN). The reference rounds the exact result (fractions) in each mode."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import MODES, add, div, f32, fma, mul, sqrt  # noqa: E402

KERNEL = "fround_modes"
FEATURES = ["float", "rounding-modes", "fma", "sqrt", "div", "inf", "subnormal", "multi-block", "partial-block"]

N = 12


def launch():
    rng = np.random.default_rng(3216)
    a = rng.standard_normal(N).astype(np.float32) * np.float32(7)
    b = rng.standard_normal(N).astype(np.float32) * np.float32(3)
    c = rng.standard_normal(N).astype(np.float32)
    a[0], b[0], c[0] = 3e38, 3e38, -1.0              # add and mul overflow
    a[1], b[1], c[1] = 2.0**-130, 0.75, 2.0**-149    # subnormal results
    a[2], b[2], c[2] = 1.5, -1.5, 2.25               # a - b... and a*b + c exact zero
    a[3], b[3], c[3] = -4.0, 3.0, 0.0                # sqrt of a negative
    a[4], b[4], c[4] = 1.0, 2.0**-24, -1.0           # a + b a tie
    return (2,), (8,), [a, b, c, np.zeros(28 * N, np.float32), np.int32(N)]


def reference(a, b, c, out, n):
    r = []
    for x, y, z in zip(a, b, c):
        r += [add(x, y, m) for m in MODES]
        r += [add(x, -y, m) for m in MODES]
        r += [mul(x, y, m) for m in MODES]
        r += [div(x, y, m) for m in MODES]
        r += [fma(x, y, z, m) for m in MODES]
        r += [sqrt(x, m) for m in MODES]
        r += [div(f32(1), y, m) for m in MODES]
    return [a, b, c, np.array(r, np.float32), None]
