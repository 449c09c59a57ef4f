"""atomicAnd clearing bits of a 128-slot free bitmap (repeated slots are
harmless); shifts by a variable amount, multi-block."""
import numpy as np

KERNEL = "atomic_and"
FEATURES = ["atomics", "atomic-and", "bitops", "global-memory", "multi-block"]

N, GRID, BLOCK = 40, 3, 16


def launch():
    rng = np.random.default_rng(408)
    taken = rng.integers(0, 128, N).astype(np.int32)
    taken[:4] = [0, 31, 32, 127]
    free_bits = np.array([0xFFFFFFFF, 0xFFFFFFFF, 0x0F0F0F0F, 0xFFFFFFFF], dtype=np.uint32)
    return (GRID,), (BLOCK,), [taken, free_bits, np.int32(N)]


def reference(taken, free_bits, n):
    bits = np.unpackbits(free_bits.view(np.uint8), bitorder="little")   # bit k of word w at 32*w + k
    bits[taken[:n]] = 0
    return [taken, np.packbits(bits, bitorder="little").view(np.uint32), None]
