"""logf and log2f of 24 inputs (normal, subnormal, 1, +-0, negative, inf, NaN) and expf of 24
(underflow to subnormals and 0, overflow to inf, NaN), 2 blocks of 16. No host function gives
these bits: the reference (_fref.logf/log2f/expf) runs the library's own sequence, op by op
(the PTX both front ends emit, with ex2.approx as docs/isa.md defines it), exactly, never the
interpreter; tests/test_float_suite.py checks those references against math.log, math.log2
and math.exp: within 1 ulp (logf, log2f) and 2 ulp (expf), CUDA's documented bounds."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import expf, from_bits, log2f, logf  # noqa: E402

KERNEL = "flog_exp"
FEATURES = ["float", "math", "logf", "log2f", "expf", "approx", "nan", "inf", "subnormal", "multi-block",
            "partial-block"]

N = 24


def launch():
    rng = np.random.default_rng(3218)
    x = np.exp(rng.uniform(-80, 80, N)).astype(np.float32)
    y = rng.uniform(-110, 90, N).astype(np.float32)
    x[:10] = [1.0, 2.0, 0.5, 1e-40, 2.0**-149, 0.0, -0.0, -1.0, np.inf, 3.4e38]
    x[10] = from_bits(0x7FC0_0042)
    y[:10] = [0.0, -0.0, 1.0, -1.0, 88.7, 88.8, -87.5, -100.0, -np.inf, np.inf]
    y[10] = from_bits(0x7FC0_0042)
    return (2,), (16,), [x, y, np.zeros(3 * N, np.float32), np.int32(N)]


def reference(x, y, out, n):
    r = []
    for a, b in zip(x, y):
        r += [logf(a), log2f(a), expf(b)]
    return [x, y, np.array(r, np.float32), None]
