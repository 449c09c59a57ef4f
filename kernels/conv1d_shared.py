"""1D convolution (GPU-Puzzles 13) with a 3-tap filter over 21 elements in
blocks of 8: shared tile + halo, filter in shared memory, one barrier."""
import numpy as np

KERNEL = "conv1d_shared"
FEATURES = ["shared", "barrier", "multi-block", "partial-block"]

N = 21


def launch():
    rng = np.random.default_rng(401)
    a = rng.integers(-100, 100, N, dtype=np.int64).astype(np.int32)
    w = np.array([3, -1, 2], np.int32)
    return (3,), (8,), [a, w, np.zeros(N, np.int32), np.int32(N)]


def reference(a, w, out, n):
    padded = np.concatenate([a, np.zeros(len(w) - 1, np.int32)])
    # np.correlate slides w over a without flipping it, as the kernel does
    return [a, w, np.correlate(padded, w, mode="valid").astype(np.int32), None]
