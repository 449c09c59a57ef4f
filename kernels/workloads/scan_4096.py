"""Inclusive prefix sum of 4,096 int32s in one launch (chained scan): 64 blocks of 16 threads,
each scanning a 64-element chunk in shared memory (per-thread scans of 4, a Hillis-Steele scan of
the 16 thread totals) and taking the carry of the chunks before it from global memory, ordered
by an atomic ticket, a ready flag per chunk, a spin-wait and __threadfence. Full-range inputs, so
the sums wrap modulo 2^32. in at global words 0-4095, out at 4096-8191, then chunk_prefix (64),
chunk_ready (64) and the ticket."""
import numpy as np

KERNEL = "scan_4096"
FEATURES = ["workload", "scan", "chained-scan", "shared-memory", "barrier", "loop", "atomic-add",
            "threadfence", "spin-wait", "volatile", "multi-block", "multi-warp", "wraparound", "large-memory"]

N, CHUNK = 4096, 64


def launch():
    rng = np.random.default_rng(9104)
    data = rng.integers(-2**31, 2**31, N, dtype=np.int64).astype(np.int32)
    out = np.full(N, -1, dtype=np.int32)
    prefix = np.full(N // CHUNK, 0x7777, dtype=np.int32)
    ready = np.zeros(N // CHUNK, dtype=np.int32)
    ticket = np.zeros(1, dtype=np.uint32)
    return (N // CHUNK,), (16,), [data, out, prefix, ready, ticket]


def wrap(v):
    return (np.asarray(v, np.int64) % 2**32).astype(np.uint32).view(np.int32)


def reference(data, out, prefix, ready, ticket):
    scan = wrap(np.cumsum(data.astype(np.int64)))
    return [data, scan, scan[CHUNK - 1::CHUNK].copy(), np.ones_like(ready),
            np.array([N // CHUNK], np.uint32)]
