"""Duff's device (switch into an unrolled do-while) copying x + 1 for a
per-thread length 0..stride: irreducible control flow with divergent entry
points and trip counts; words past each length keep their sentinel."""
import numpy as np

KERNEL = "duff_copy"
FEATURES = ["data-dependent-loop", "divergence", "early-return", "multi-block", "multi-warp"]

THREADS, STRIDE = 16, 11


def launch():
    rng = np.random.default_rng(317)
    src = rng.integers(-1000, 1000, THREADS * STRIDE, dtype=np.int64).astype(np.int32)
    length = rng.integers(0, STRIDE + 1, THREADS, dtype=np.int64)
    length[:6] = [0, 1, 2, 3, 4, STRIDE]
    length[6] = -3
    return (2,), (8,), [src, np.full(THREADS * STRIDE, 7777, np.int32), length.astype(np.int32), np.int32(STRIDE)]


def reference(src, dst, length, stride):
    dst = dst.copy()
    for t, count in enumerate(length.tolist()):
        lo = t * stride
        dst[lo:lo + max(count, 0)] = src[lo:lo + max(count, 0)] + 1
    return [src, dst, None, None]
