"""Radix sort of 16 unsigned 8-bit keys by 8 stable one-bit splits: ballot +
popc ranks, shared-memory warp counts and scatter, three barriers per pass;
duplicates keep their order (the sort must be stable to be correct)."""
import numpy as np

KERNEL = "radix_sort_ballot"
FEATURES = ["sorting", "radix-sort", "warp-vote", "vote-ballot", "popc", "shared-memory", "barrier", "loop", "in-place"]

BITS = 8


def launch():
    rng = np.random.default_rng(803)
    keys = rng.integers(0, 256, 16).astype(np.uint32)
    keys[:3] = [255, 0, 255]
    return (1,), (16,), [keys, np.int32(BITS)]


def reference(keys, bits):
    return [np.sort(keys), None]
