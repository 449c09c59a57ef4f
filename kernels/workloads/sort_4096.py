"""Block-wise bitonic sort of 4,096 int32 keys: 16 blocks of 16 threads, each sorting a 256-key
chunk in shared memory (36 compare-exchange steps of 128 pairs, 8 a thread, a barrier after
each), in place at global words 0-4095. Full-range signed keys with duplicates (a run of
equal keys, a few repeated values, INT_MIN and INT_MAX, an already sorted chunk and a reversed
one); the reference sorts the same chunks with NumPy."""
import numpy as np

KERNEL = "sort_4096"
FEATURES = ["workload", "sort", "bitonic", "shared-memory", "barrier", "loop", "nested-loops",
            "divergence", "multi-block", "multi-warp", "large-memory"]

N, CHUNK = 4096, 256


def launch():
    rng = np.random.default_rng(9105)
    keys = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    keys[100:140] = 7                                   # a run of duplicates in chunk 0
    keys[300:556:16] = rng.integers(-3, 3, 16)          # small repeated values across chunks 1-2
    keys[600], keys[601] = -2**31, 2**31 - 1
    keys[2 * CHUNK:3 * CHUNK].sort()                    # chunk 2 already sorted
    keys[3 * CHUNK:4 * CHUNK] = np.sort(keys[3 * CHUNK:4 * CHUNK])[::-1]   # chunk 3 reversed
    return (N // CHUNK,), (16,), [keys]


def reference(keys):
    return [np.sort(keys.reshape(-1, CHUNK), axis=1).reshape(-1)]
