"""Float atomicAdd histogram, 44 weighted keys into 8 bins on 3 blocks of 16: global atomics,
shared atomics merged into global, and the subnormal rule (global float atomics flush
subnormal inputs and results, shared ones do not). The weights are multiples of 1/8, every
sum exact: the result does not depend on the atomics' order, and the reference sums exactly."""
from fractions import Fraction

import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import round_f32  # noqa: E402

KERNEL = "fatomic_hist"
FEATURES = ["float", "histogram", "atomic-add", "float-atomic", "subnormal", "shared-memory", "barrier",
            "multi-block", "partial-block"]

N, GRID, BLOCK, BINS = 44, 3, 16, 8
SUB = Fraction(1, 2**140)


def launch():
    rng = np.random.default_rng(3215)
    key = rng.integers(0, BINS, N).astype(np.int32)
    w = (rng.integers(-40, 41, N) / 8).astype(np.float32)
    gbins = (rng.integers(-8, 9, BINS) / 4).astype(np.float32)
    sbins = np.zeros(BINS, np.float32)
    tiny = np.array([2.0**-130, 5, 5, 5], np.float32)      # tiny[0] subnormal: flushed by the first add
    return (GRID,), (BLOCK,), [key, w, gbins, sbins, tiny, np.int32(N)]


def reference(key, w, gbins, sbins, tiny, n):
    g = [Fraction(float(v)) for v in gbins]
    s = [Fraction(float(v)) for v in sbins]
    for i in range(n):
        g[key[i]] += Fraction(float(w[i]))
        s[key[i]] += Fraction(float(w[i]))
    block_tiny = [round_f32(SUB * BLOCK) for _ in range(GRID)]
    return [key, w, np.array([round_f32(v) for v in g], np.float32), np.array([round_f32(v) for v in s], np.float32),
            np.array([0.0] + block_tiny, np.float32), None]
