"""Blocks of 6 threads (a full and a partial warp): per-block reverse through
shared memory across a barrier, plus each thread's warp*10 + lane."""
import numpy as np

KERNEL = "partial_warp_reverse"
FEATURES = ["partial-warp", "shared", "barrier", "multi-block", "multi-warp"]

BLOCKS, THREADS = 5, 6


def launch():
    rng = np.random.default_rng(308)
    x = rng.integers(-1000, 1000, BLOCKS * THREADS, dtype=np.int64).astype(np.int32)
    return (BLOCKS,), (THREADS,), [x, np.zeros_like(x), np.zeros_like(x)]


def reference(x, out, ids):
    t = np.arange(THREADS)
    return [x, x.reshape(BLOCKS, THREADS)[:, ::-1].ravel(),
            np.tile((t // 4) * 10 + t % 4, BLOCKS).astype(np.int32)]
