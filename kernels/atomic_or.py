"""atomicOr building a 128-value presence bitmap, using the returned old word to
count distinct values; multi-block, repeated values."""
import numpy as np

KERNEL = "atomic_or"
FEATURES = ["atomics", "atomic-or", "bitops", "global-memory", "multi-block", "c++-kernel"]

N, GRID, BLOCK = 45, 3, 16


def launch():
    rng = np.random.default_rng(409)
    values = rng.integers(0, 128, N).astype(np.int32)
    values[:3] = [31, 31, 96]
    present = np.array([0, 0, 0, 1 << 31], dtype=np.uint32)    # 127 is already present
    distinct = np.zeros(1, dtype=np.int32)
    return (GRID,), (BLOCK,), [values, present, distinct, np.int32(N)]


def reference(values, present, distinct, n):
    before = {32 * w + k for w in range(4) for k in range(32) if int(present[w]) >> k & 1}
    after = before | set(values[:n].tolist())
    words = np.zeros(4, dtype=np.uint32)
    for v in after:
        words[v // 32] |= np.uint32(1 << (v % 32))
    return [values, words, np.array([len(after - before)], dtype=np.int32), None]
