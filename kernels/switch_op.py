"""A switch over opcodes 0..6 and 9 with a default (7, 8, negatives, large):
each lane of a warp may take a different case."""
import numpy as np

KERNEL = "switch_op"
FEATURES = ["divergence", "multi-block", "multi-warp"]

OPS = {
    0: lambda a, b: a + b, 1: lambda a, b: a - b, 2: lambda a, b: a * b,
    3: lambda a, b: a & b, 4: lambda a, b: a | b, 5: lambda a, b: a ^ b,
    6: min, 9: lambda a, b: a >> (b % 32),
}


def launch():
    rng = np.random.default_rng(306)
    n = 30
    ops = rng.integers(-1, 11, n, dtype=np.int64)
    ops[:12] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1000]
    a = rng.integers(-2**20, 2**20, n, dtype=np.int64)
    b = rng.integers(-2**20, 2**20, n, dtype=np.int64)
    return (2,), (16,), [ops.astype(np.int32), a.astype(np.int32), b.astype(np.int32), np.zeros(n, np.int32), np.int32(n)]


def reference(ops, a, b, out, n):
    res = [OPS.get(op, lambda a, b: -1)(x, y) for op, x, y in zip(ops.tolist(), a.tolist(), b.tolist())]
    wrapped = np.array([v & 0xFFFFFFFF for v in res], np.uint32).view(np.int32)
    return [ops, a, b, wrapped, None]
