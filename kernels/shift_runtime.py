"""Left, logical right and arithmetic right shifts by runtime amounts 0..40
(masked to 0..31), plus a guarded left shift that yields 0 for amounts >= 32."""
import numpy as np

KERNEL = "shift_runtime"
FEATURES = ["bitops", "elementwise", "multi-block"]


def launch():
    rng = np.random.default_rng(206)
    n = 41
    x = rng.integers(-2**31, 2**31, n, dtype=np.int64)
    x[:4] = [-1, -2**31, 1, 2**31 - 1]
    s = np.arange(n, dtype=np.int64)       # every amount 0..40 once
    rng.shuffle(s)
    return (3,), (16,), [x.astype(np.int32), s.astype(np.int32), np.zeros(4 * n, np.int32), np.int32(n)]


def reference(x, s, out, n):
    rows = []
    for v, k in zip(x.tolist(), s.tolist()):
        u, m = v & 0xFFFFFFFF, k % 32
        rows.append([(u << m) & 0xFFFFFFFF, u >> m, (v >> m) & 0xFFFFFFFF,
                     0 if k >= 32 else (u << k) & 0xFFFFFFFF])
    return [x, s, np.array(rows, np.uint32).view(np.int32).ravel(), None]
