"""__activemask in divergent code: an early return for threads past n, then an
if/else on the data; the mask names exactly the lanes on each side."""
import numpy as np

KERNEL = "vote_activemask"
FEATURES = ["warp-vote", "activemask", "divergence", "early-return", "partial-warp"]

N, BLOCK = 14, 16


def launch():
    rng = np.random.default_rng(603)
    data = rng.integers(-100, 100, N).astype(np.int32)
    data[:8] = [1, 3, -5, 7, 2, 4, -6, 0]        # all odd, then all even
    out = np.full(BLOCK, 0xEEEE, dtype=np.uint32)
    return (1,), (BLOCK,), [data, out, np.int32(N)]


def reference(data, out, n):
    out = out.copy()
    for w in range(BLOCK // 4):
        lanes = range(4 * w, min(4 * w + 4, n))
        odd = sum(1 << (i % 4) for i in lanes if data[i] % 2)
        even = sum(1 << (i % 4) for i in lanes if data[i] % 2 == 0)
        alive = odd | even
        for i in lanes:
            out[i] = (odd if data[i] % 2 else even << 4) | alive << 8
    return [data, out, None]
