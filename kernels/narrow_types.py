"""char/short arithmetic: truncation of 32-bit inputs, sign extension of signed
char/short, zero extension of unsigned char/short, 8-bit add and 16-bit multiply
that wrap, 16-bit unsigned underflow, and arithmetic shift of a short."""
import numpy as np

KERNEL = "narrow_types"
FEATURES = ["narrow-types", "wraparound", "elementwise", "multi-block"]


def launch():
    rng = np.random.default_rng(207)
    n = 24
    x = rng.integers(-2**31, 2**31, n, dtype=np.int64)
    y = rng.integers(-2**31, 2**31, n, dtype=np.int64)
    x[:6] = [127, 128, 255, 32767, 32768, -1]
    y[:6] = [1, -1, 0x1FF, 2, 999, 65535]
    return (2,), (16,), [x.astype(np.int32), y.astype(np.int32), np.zeros(6 * n, np.int32), np.int32(n)]


def reference(x, y, out, n):
    i8, u8, i16, u16 = np.int8, np.uint8, np.int16, np.uint16
    # NumPy narrow-int arithmetic wraps at the narrow width, as the C casts do.
    c, uc, s, us = x.astype(i8), y.astype(u8), x.astype(i16), y.astype(u16)
    cols = [c, uc, c + y.astype(i8), s * y.astype(i16), us - u16(1000),
            (s >> 3).astype(np.int32) + (uc * u8(3)).astype(np.int32)]
    return [x, y, np.stack([col.astype(np.int32) for col in cols], 1).ravel(), None]
