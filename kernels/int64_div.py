"""long long / and %, signed and unsigned, on (low, high) word pairs: divisors
of both signs and sizes (never 0, never INT64_MIN / -1, both undefined in C++)."""
import numpy as np

KERNEL = "int64_div"
FEATURES = ["64-bit", "signed-div", "unsigned-div", "multi-block"]

N = 12
M64 = 2**64 - 1


def launch():
    rng = np.random.default_rng(315)
    x = [int(v) for v in rng.integers(-2**63, 2**63, N, dtype=np.int64)]
    d = [int(v) for v in rng.integers(-2**20, 2**20, N, dtype=np.int64)]
    d[:4] = [int(v) for v in rng.integers(-2**62, 2**62, 4, dtype=np.int64)]
    x[8:], d[8:] = [-7, 7, -2**63, 2**63 - 1], [2, -2, 3, -1]
    d = [v or 1 for v in d]
    words = lambda vals: np.array([w for v in vals for w in (v & 0xFFFFFFFF, (v & M64) >> 32)], np.uint32)
    return (2,), (8,), [words(x), words(d), np.zeros(8 * N, np.uint32), np.int32(N)]


def _signed(lo, hi):
    v = int(lo) | int(hi) << 32
    return v - 2**64 if v >> 63 else v


def reference(a, b, out, n):
    rows = []
    for i in range(n):
        x, d = _signed(a[2 * i], a[2 * i + 1]), _signed(b[2 * i], b[2 * i + 1])
        q = abs(x) // abs(d) * (1 if (x < 0) == (d < 0) else -1)     # C: truncate toward zero
        ux, ud = x & M64, d & M64
        for v in (q, x - q * d, ux // ud, ux % ud):
            rows += [v & 0xFFFFFFFF, (v & M64) >> 32]
    return [a, b, np.array(rows, np.uint64).astype(np.uint32), None]
