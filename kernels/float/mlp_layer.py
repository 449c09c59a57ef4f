"""An MLP layer y = relu(W x + b) with 12 outputs of 16 inputs on 2 blocks of 8 (the second
partial): fmaf accumulation from the bias, ReLU by fmaxf. Rows 10 and 11 give the edge cases:
an exact -0 (ReLU makes it +0) and a NaN from inf * 0 (fmaxf gives 0)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32, fma, fmax  # noqa: E402

KERNEL = "mlp_layer"
FEATURES = ["float", "fma", "mlp", "matrix-vector", "multi-block", "partial-block", "early-return", "nan"]

OUTS, INS = 12, 16


def launch():
    rng = np.random.default_rng(3207)
    w = (rng.standard_normal(OUTS * INS) / 4).astype(np.float32)
    x = rng.standard_normal(INS).astype(np.float32)
    bias = (rng.standard_normal(OUTS) / 2 + 0.25).astype(np.float32)
    x[3] = 0.0
    w[10 * INS:11 * INS] = np.where(x < 0, 0.0, -0.0)    # every product -0, and the bias:
    bias[10] = -0.0                                      # row 10's sum is an exact -0
    w[11 * INS + 3] = np.inf                            # inf * x[3] = inf * 0: NaN
    return (2,), (8,), [w, x, bias, np.full(OUTS, 7, np.float32), np.int32(OUTS), np.int32(INS)]


def reference(w, x, bias, y, outs, ins):
    out = []
    for j in range(outs):
        acc = bias[j]
        for k in range(ins):
            acc = fma(w[j * ins + k], x[k], acc)
        out.append(fmax(f32(0), acc))
    return [w, x, bias, np.array(out, np.float32), None, None]
