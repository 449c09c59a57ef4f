"""Inclusive float prefix sum of 16 values, Hillis-Steele in shared memory (one block of 16,
barriers between reads and writes); the reference adds in the same tree order, which differs
from a running sum for these inputs."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "fscan_shared"
FEATURES = ["float", "scan", "shared-memory", "barrier", "multi-warp"]

N = 16


def launch():
    rng = np.random.default_rng(3213)
    x = (rng.standard_normal(N) * np.float32(10.0) ** rng.integers(-3, 4, N)).astype(np.float32)
    return (1,), (N,), [x, np.zeros(N, np.float32)]


def reference(x, out):
    s = list(x)
    offset = 1
    while offset < N:
        s = [s[t] + (s[t - offset] if t >= offset else f32(0)) for t in range(N)]
        offset *= 2
    return [x, np.array(s, np.float32)]
