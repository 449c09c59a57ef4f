"""popc, clz, brev, bit-field extract (unsigned and sign-extended), bit-field
insert, and an in-place xor swap, on 0, all-ones and random words."""
import numpy as np

KERNEL = "bit_ops"
FEATURES = ["bitops", "elementwise", "multi-block"]


def launch():
    rng = np.random.default_rng(205)
    n = 20
    x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x[:5] = [0, 0xFFFFFFFF, 1, 0x80000000, 0x000FF000]
    return (2,), (12,), [x, y, np.zeros(6 * n, np.uint32), np.int32(n)]


def _row(a, b):
    bits = f"{a:032b}"
    field = (a >> 12) & 0xFF
    signed_field = field - 256 if field >= 128 else field
    return [bits.count("1"), len(bits) - len(bits.lstrip("0")), int(bits[::-1], 2),
            (a >> 4) & 0x7F, signed_field & 0xFFFFFFFF, (a & 0xFFFF00FF) | ((b & 0xFF) << 8)]


def reference(x, y, out, n):
    rows = [_row(a, b) for a, b in zip(x.tolist(), y.tolist())]
    return [y.copy(), x.copy(), np.array(rows, np.uint64).astype(np.uint32).ravel(), None]
