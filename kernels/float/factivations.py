"""relu, leaky relu, clamp, relu6 (compare and select), fabsf and negation elementwise on 3
blocks of 16 over 44 elements (the last partial): signed zeros, subnormals (a leaky slope
that underflows them), +-inf, NaNs with payloads (fmaxf drops a NaN, a select keeps its
bits, abs/neg/mul give the canonical NaN) and values at the clamp bounds."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import canon, f32, fmax, fmin, from_bits  # noqa: E402

KERNEL = "factivations"
FEATURES = ["float", "elementwise", "activation", "min-max", "compare-select", "abs", "neg", "multi-block",
            "multi-warp", "partial-block", "early-return", "nan", "inf", "subnormal", "signed-zero"]

N = 44


def launch():
    rng = np.random.default_rng(3303)
    x = (rng.standard_normal(N) * 5).astype(np.float32)
    x[:20] = [0.0, -0.0, 1e-40, -1e-40, 2.0**-149, -(2.0**-149), np.inf, -np.inf, 6.0, 6.000001,
              -1.5, -1.5000001, 2.0, 2.0000002, -3.4028235e38, 3.4028235e38, 1e-38, -1e-38, 0.0, 0.0]
    x[18] = from_bits(0x7FC0_5A5A)
    x[19] = from_bits(0xFFC0_0003)
    x[20] = from_bits(0x7F80_0010)
    return (3,), (16,), [x, np.zeros(6 * N, np.float32), f32(0.01), f32(-1.5), f32(2.0), np.int32(N)]


def reference(x, out, slope, lo, hi, n):
    zero, six = f32(0.0), f32(6.0)
    res = []
    with np.errstate(all="ignore"):
        for v in x[:n]:
            res += [fmax(v, zero),
                    v if v > zero else canon(v * slope),
                    fmin(fmax(v, lo), hi),
                    zero if v < zero else (six if v > six else v),
                    canon(np.abs(v)),
                    canon(-v)]
    return [x, np.array(res, np.float32), None, None, None, None]
