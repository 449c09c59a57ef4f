"""atomicXor parity bitmap over 64 values (int words, so bit 31 is the sign);
values repeat so some toggles cancel; multi-block."""
import numpy as np

KERNEL = "atomic_xor"
FEATURES = ["atomics", "atomic-xor", "bitops", "global-memory", "multi-block"]

N, GRID, BLOCK = 48, 3, 16


def launch():
    rng = np.random.default_rng(410)
    values = rng.integers(0, 64, N).astype(np.int32)
    values[:5] = [31, 31, 31, 63, 0]
    parity = np.array([0, -2**31], dtype=np.int32)       # bit 63 starts set
    return (GRID,), (BLOCK,), [values, parity, np.int32(N)]


def reference(values, parity, n):
    counts = np.bincount(values[:n], minlength=64)
    bits = np.unpackbits(parity.view(np.uint8), bitorder="little")
    bits ^= (counts % 2).astype(np.uint8)
    return [values, np.packbits(bits, bitorder="little").view(np.int32), None]
