"""One kernel applying add, exch, max, min, inc, dec, cas, and, or, xor to ten
words from 32 threads in 2 blocks (CUDA sample simpleAtomicIntrinsics style,
made schedule independent)."""
import numpy as np

KERNEL = "simple_atomic_intrinsics"
FEATURES = ["atomics", "atomic-add", "atomic-exch", "atomic-max", "atomic-min", "atomic-inc",
            "atomic-dec", "atomic-cas", "atomic-and", "atomic-or", "atomic-xor", "unsigned", "multi-block"]

GRID, BLOCK = 2, 16


def launch():
    g = np.array([5, 0, 7, 0xFFFFFFFF, 0, 0, 0, 0xFF, 0, 0xDEADBEEF], dtype=np.uint32)
    return (GRID,), (BLOCK,), [g]


def reference(g):
    t = np.arange(GRID * BLOCK, dtype=np.int64)
    m = 2**32
    out = [
        (int(g[0]) + 10 * t.size) % m,
        t.size,
        max(int(g[2]), int(t.max())),
        min(int(g[3]), int(t.min())),
        (int(g[4]) + t.size) % 18,            # starts in range, so plain modular counting
        (int(g[5]) - t.size) % 138,           # 0 wraps to 137: counting down modulo 138
        42,
        int(g[7]) & int(np.bitwise_and.reduce(2 * t + 7)),
        int(g[8]) | int(np.bitwise_or.reduce(1 << (t % 32))),
        int(g[9]) ^ int(np.bitwise_xor.reduce(t * 2654435761 % m)),
    ]
    return [np.array(out, dtype=np.int64).astype(np.uint32)]
