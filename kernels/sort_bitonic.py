"""Bitonic sort of 16 unsigned keys with 16 threads: nested stage loops with a
barrier per step, xor partner indexing, unsigned compares (keys above 2^31)."""
import numpy as np

KERNEL = "sort_bitonic"
FEATURES = ["sorting", "bitonic", "shared-memory", "barrier", "loop", "divergence", "unsigned", "in-place", "c++-kernel"]


def launch():
    rng = np.random.default_rng(802)
    keys = rng.integers(0, 2**32, 16, dtype=np.uint64).astype(np.uint32)
    keys[:4] = [0x80000000, 0x7FFFFFFF, 0, 0xFFFFFFFF]
    keys[4] = keys[5]                                  # a duplicate
    return (1,), (16,), [keys]


def reference(keys):
    return [np.sort(keys)]
