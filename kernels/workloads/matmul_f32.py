"""32x32 float32 matmul tiled through shared memory (4x4 tiles, 64 blocks of 4x4): A at global
words 0-1023, B at 1024-2047, C at 2048-3071. The kernel adds the rounded products a*b for
k = 0..31 in order into a float32 sum (the front ends never contract to fma); the reference
does the same 32 steps in NumPy float32, one rounded multiply and one rounded add per step, for
every element at once (NumPy's elementwise float32 ops round each result to nearest even)."""
import numpy as np

KERNEL = "matmul_f32"
FEATURES = ["workload", "float", "matmul", "tiling", "shared-memory", "barrier", "loop", "2d-block",
            "2d-grid", "multi-block", "multi-warp", "large-memory"]

N = 32


def launch():
    rng = np.random.default_rng(9102)
    A = (rng.standard_normal(N * N) * 4).astype(np.float32)
    B = (rng.standard_normal(N * N) / 3).astype(np.float32)
    C = np.full(N * N, -7.0, dtype=np.float32)
    return (N // 4, N // 4), (4, 4), [A, B, C]


def reference(A, B, C):
    a, b = A.reshape(N, N), B.reshape(N, N)
    s = np.zeros((N, N), np.float32)
    for k in range(N):                       # the kernel's order: k = 0..31, one rounding per op
        s = s + a[:, k:k + 1] * b[k:k + 1, :]
    assert s.dtype == np.float32
    return [A, B, s.reshape(-1)]
