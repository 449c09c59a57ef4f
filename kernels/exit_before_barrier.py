"""Per-block reverse through shared memory where the threads past n exit
before the barrier the others wait at: in block 3 two lanes of warp 0 and
warps 1-2, in block 4 everyone (docs/isa.md: exited threads complete a barrier)."""
import numpy as np

KERNEL = "exit_before_barrier"
FEATURES = ["early-return", "barrier", "shared", "partial-block", "multi-block", "multi-warp"]

N, BLOCK = 38, 12


def launch():
    rng = np.random.default_rng(316)
    x = rng.integers(-10**6, 10**6, 48, dtype=np.int64).astype(np.int32)
    return (5,), (BLOCK,), [x, np.full(48, -5, np.int32), np.int32(N)]   # block 4 has no element


def reference(x, out, n):
    out = out.copy()
    for base in range(0, n, BLOCK):
        chunk = x[base:min(base + BLOCK, n)]
        out[base:base + chunk.size] = chunk[::-1]
    return [x, out, None]
