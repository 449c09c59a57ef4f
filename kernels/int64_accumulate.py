"""Signed 64-bit accumulation of 32x32 products per row (sums far beyond 32
bits, both signs), then >> 7 (arithmetic), * -6700417 (wraps in 64 bits) and
the difference between the sign-extended low word and the sum."""
import numpy as np

KERNEL = "int64_accumulate"
FEATURES = ["64-bit", "wraparound", "data-dependent-loop", "multi-block", "multi-warp"]

ROWS, COLS = 12, 6
M64 = 2**64 - 1


def launch():
    rng = np.random.default_rng(314)
    a = rng.integers(-2**31, 2**31, ROWS * COLS, dtype=np.int64)
    b = rng.integers(-2**28, 2**28, ROWS * COLS, dtype=np.int64)   # random sums stay below 2**62
    # rows 0 and 1: sums just inside the long long range (2**63 - 2**31, -2**63 + 2**32)
    a[:COLS], b[:COLS] = [-2**31, -2**31, 0, 0, 0, 0], [-2**31, -2**31 + 1, 5, 6, 7, 8]
    a[COLS:2 * COLS], b[COLS:2 * COLS] = [-2**31, 2**31 - 1, 0, 0, 0, 0], [2**31 - 1, -2**31, 1, 2, 3, 4]
    return (2,), (6,), [a.astype(np.int32), b.astype(np.int32), np.zeros(8 * ROWS, np.int32), np.int32(COLS)]


def _words(v):
    v &= M64
    return [v & 0xFFFFFFFF, v >> 32]


def reference(a, b, out, cols):
    prods = a.astype(object).reshape(ROWS, cols) * b.astype(object).reshape(ROWS, cols)
    rows = []
    for s in prods.sum(axis=1):
        assert -2**63 <= s < 2**63, "a row sum overflows long long (undefined in C++)"
        low = (s & 0xFFFFFFFF) - (2**32 if s & 0x80000000 else 0)
        rows += _words(s) + _words(s >> 7) + _words(s * -6700417) + _words(low - s)
    return [a, b, np.array(rows, np.uint64).astype(np.uint32).view(np.int32), None]
