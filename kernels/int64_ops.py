"""long long: 64-bit add with carry between words, unsigned 32x32->64 multiply,
64-bit shift left by a runtime amount 0..63, signed and unsigned 64-bit compare.
Each 64-bit value is a (low, high) pair of uint32 words."""
import numpy as np

KERNEL = "int64_ops"
FEATURES = ["64-bit", "wraparound", "elementwise", "multi-block"]

M64 = 2**64 - 1


def launch():
    rng = np.random.default_rng(208)
    n = 12
    a = rng.integers(0, 2**64, n, dtype=np.uint64)
    b = rng.integers(0, 2**64, n, dtype=np.uint64)
    # carry out of the low word, signed/unsigned compare disagreeing, equal values, shift 0 and 63
    a[:5] = [0xFFFFFFFF, 2**63, 5, M64, 1]
    b[:5] = [1, 1, 5, 32, 63]
    words = lambda v: np.stack([v & 0xFFFFFFFF, v >> 32], 1).ravel().astype(np.uint32)
    return (2,), (8,), [words(a), words(b), np.zeros(8 * n, np.uint32), np.int32(n)]


def reference(a, b, out, n):
    rows = []
    for i in range(n):
        x = int(a[2 * i]) | int(a[2 * i + 1]) << 32
        y = int(b[2 * i]) | int(b[2 * i + 1]) << 32
        sx, sy = (x - 2**64 if x >> 63 else x), (y - 2**64 if y >> 63 else y)
        vals = [(x + y) & M64, int(a[2 * i]) * int(b[2 * i]), (x << (int(b[2 * i]) & 63)) & M64]
        rows += [w for v in vals for w in (v & 0xFFFFFFFF, v >> 32)] + [int(sx < sy), int(x < y)]
    return [a, b, np.array(rows, np.uint64).astype(np.uint32), None]
