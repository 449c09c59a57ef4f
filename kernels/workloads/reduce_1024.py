"""Sum of 4,096 full-range int32s in one 1,024-thread block: the input at global words 0-4095,
the sum at word 4096. The reference adds in int64 and keeps the low 32 bits (CUDA's int
addition wraps; the order does not change a sum modulo 2^32)."""
import numpy as np

KERNEL = "reduce_1024"
FEATURES = ["workload", "reduction", "shared-memory", "barrier", "loop", "thread-tiles", "wraparound",
            "large-memory"]

N = 4096


def launch():
    rng = np.random.default_rng(9105)
    x = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    return 1, 1024, [x, np.full(1, -7, dtype=np.int32)]


def reference(x, out):
    total = int(x.astype(np.int64).sum()) % 2**32
    return [x, np.array([total], dtype=np.uint32).view(np.int32)]
