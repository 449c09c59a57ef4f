"""5-point Laplacian (4c - up - down - left - right) on a 64x64 int32 image, zero borders: 256
blocks of 4x4 threads, each staging a 6x6 halo tile in shared memory with a strided loop. The
image at global words 0-4095, the output at 4096-8191. Values up to 2^29 in magnitude, so 4c
and the sum wrap modulo 2^32; the reference works in int64 on a zero-padded copy and keeps the
low 32 bits."""
import numpy as np

KERNEL = "stencil_64x64"
FEATURES = ["workload", "stencil", "2d-block", "2d-grid", "shared-memory", "halo", "barrier", "loop",
            "bounds-check", "multi-block", "multi-warp", "wraparound", "large-memory"]

N = 64


def launch():
    rng = np.random.default_rng(9103)
    img = rng.integers(-2**29, 2**29, N * N).astype(np.int32)
    img[:N] = rng.integers(-10, 10, N)             # a quiet top row
    out = np.full(N * N, 0x5EED, dtype=np.int32)
    return (N // 4, N // 4), (4, 4), [img, out]


def reference(img, out):
    p = np.zeros((N + 2, N + 2), np.int64)
    p[1:-1, 1:-1] = img.reshape(N, N)
    c = p[1:-1, 1:-1]
    v = 4 * c - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
    return [img, (v % 2**32).astype(np.uint32).view(np.int32).reshape(-1)]
