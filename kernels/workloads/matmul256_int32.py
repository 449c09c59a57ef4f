"""32x32 int32 matmul through 16x16 shared-memory tiles, in 256-thread blocks (2x2 grid of
16x16): A at global words 0-1023, B at 1024-2047, C at 2048-3071. Full-range A, so the sums
wrap modulo 2^32; the reference multiplies in int64 and keeps the low 32 bits."""
import numpy as np

KERNEL = "matmul256_int32"
FEATURES = ["workload", "matmul", "tiling", "shared-memory", "barrier", "loop", "2d-block", "2d-grid",
            "multi-block", "thread-tiles", "wraparound", "large-memory"]

N = 32


def launch():
    rng = np.random.default_rng(9103)
    A = rng.integers(-2**31, 2**31, N * N, dtype=np.int64).astype(np.int32)
    B = rng.integers(-1000, 1000, N * N).astype(np.int32)
    C = np.full(N * N, -7, dtype=np.int32)
    return (N // 16, N // 16), (16, 16), [A, B, C]


def reference(A, B, C):
    a = A.astype(np.int64).reshape(N, N)
    b = B.astype(np.int64).reshape(N, N)
    c = (a @ b) % 2**32                      # |a @ b| < 2^31 * 1000 * 32 < 2^63: exact in int64
    return [A, B, c.astype(np.uint32).view(np.int32).reshape(-1)]
