"""32x32 float32 matmul through 16x16 shared-memory tiles, in 256-thread blocks (2x2 grid of
16x16): A at global words 0-1023, B at 1024-2047, C at 2048-3071. The kernel adds the rounded
products a*b for k = 0..31 in order into a float32 sum (the front ends never contract to fma);
the reference does the same 32 steps in NumPy float32, one rounding per op."""
import numpy as np

KERNEL = "matmul256_f32"
FEATURES = ["workload", "float", "matmul", "tiling", "shared-memory", "barrier", "loop", "2d-block",
            "2d-grid", "multi-block", "thread-tiles", "large-memory"]

N = 32


def launch():
    rng = np.random.default_rng(9104)
    A = (rng.standard_normal(N * N) * 4).astype(np.float32)
    B = (rng.standard_normal(N * N) / 3).astype(np.float32)
    C = np.full(N * N, -7.0, dtype=np.float32)
    return (N // 16, N // 16), (16, 16), [A, B, C]


def reference(A, B, C):
    a, b = A.reshape(N, N), B.reshape(N, N)
    s = np.zeros((N, N), np.float32)
    for k in range(N):                       # the kernel's order: k = 0..31, one rounding per op
        s = s + a[:, k:k + 1] * b[k:k + 1, :]
    assert s.dtype == np.float32
    return [A, B, s.reshape(-1)]
