"""atomicCAS: a CAS retry loop implementing an atomic multiply (product wraps
mod 2^32, divergent retry loop) and claim-once deduplication counting
distinct keys; multi-block."""
import numpy as np

KERNEL = "atomic_cas"
FEATURES = ["atomics", "atomic-cas", "cas-loop", "divergence", "loop", "global-memory", "multi-block", "wraparound"]

N, GRID, BLOCK, SLOTS = 36, 3, 16, 24


def launch():
    rng = np.random.default_rng(407)
    factors = (2 * rng.integers(-2**30, 2**30, N) + 1).astype(np.int32)   # odd: the product never becomes 0
    keys = rng.integers(0, SLOTS, N).astype(np.int32)                     # with repeats
    seen = np.zeros(SLOTS, dtype=np.int32)
    counters = np.array([3, 0], dtype=np.int32)
    return (GRID,), (BLOCK,), [factors, keys, seen, counters, np.int32(N)]


def reference(factors, keys, seen, counters, n):
    product = int(counters[0])
    for f in factors[:n]:
        product = (product * int(f)) % 2**32
    seen = seen.copy()
    seen[keys[:n]] = 1
    distinct = len(set(keys[:n].tolist()))
    out = np.array([product, distinct], dtype=np.int64).astype(np.uint32).view(np.int32)
    return [factors, keys, seen, out, None]
