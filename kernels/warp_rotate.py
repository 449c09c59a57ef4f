"""Rotation inside each warp: lane l reads lane (l + k) mod 4 via __shfl_sync with
an out-of-range source lane (taken modulo the width)."""
import numpy as np

KERNEL = "warp_rotate"
FEATURES = ["warp-shuffle", "shfl-idx", "lane-wrap", "multi-warp", "multi-block", "c++-kernel"]

GRID, BLOCK, K = 2, 8, 3


def launch():
    rng = np.random.default_rng(305)
    data = rng.integers(-1000, 1000, GRID * BLOCK).astype(np.int32)
    out = np.zeros_like(data)
    return (GRID,), (BLOCK,), [data, out, np.int32(K)]


def reference(data, out, k):
    return [data, np.roll(data.reshape(-1, 4), -int(k), axis=1).reshape(-1), None]
