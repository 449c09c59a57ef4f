"""Byte and short arrays in memory (packed four or two to a uint32 word): a
saturating brighten, a signed recentre and a 16-bit scale that wraps; bytes past
n keep their sentinel, so narrow stores must not disturb their neighbours."""
import numpy as np

KERNEL = "byte_pixels"
FEATURES = ["narrow-types", "elementwise", "multi-block", "partial-block", "wraparound"]

N = 50                      # bytes; the byte arrays are 13 words, the short array 25


def launch():
    rng = np.random.default_rng(313)
    img = rng.integers(0, 256, 52, dtype=np.int64).astype(np.uint8)
    img[:6] = [0, 255, 128, 127, 215, 216]
    sentinel = lambda count, dtype: np.full(count, 0xAB, np.uint8).view(dtype)
    return (4,), (16,), [img.view(np.uint32), sentinel(52, np.uint32), sentinel(52, np.uint32),
                         sentinel(100, np.uint32), np.int32(N)]


def reference(img, bright, centred, scaled, n):
    p = img.view(np.uint8)[:n].astype(np.int64)
    bright, centred, scaled = bright.copy(), centred.copy(), scaled.copy()
    bright.view(np.uint8)[:n] = np.minimum(p + 40, 255)
    centred.view(np.int8)[:n] = p - 128
    scaled.view(np.int16)[:n] = (p * 300 - 20000).astype(np.int16)   # astype keeps the low 16 bits
    return [img, bright, centred, scaled, None]
