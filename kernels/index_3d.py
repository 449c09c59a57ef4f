"""A (2, 3, 2) grid of (2, 2, 3) blocks: linear ids from 3D indices, x fastest;
each thread writes x + 1000*block and its packed thread/block coordinates."""
import numpy as np

KERNEL = "index_3d"
FEATURES = ["3d", "multi-block", "multi-warp", "partial-warp"]

GRID, BLOCK = (2, 3, 2), (2, 2, 3)
TOTAL = int(np.prod(GRID) * np.prod(BLOCK))


def launch():
    rng = np.random.default_rng(310)
    x = rng.integers(-5000, 5000, TOTAL, dtype=np.int64).astype(np.int32)
    return GRID, BLOCK, [x, np.zeros(TOTAL, np.int32), np.zeros(TOTAL, np.uint32)]


def reference(x, out, who):
    # Enumerate threads in launch order: z outermost, x fastest, blocks before threads.
    out, who = np.empty_like(x), np.empty(TOTAL, np.uint32)
    i = 0
    for bz in range(GRID[2]):
        for by in range(GRID[1]):
            for bx in range(GRID[0]):
                for tz in range(BLOCK[2]):
                    for ty in range(BLOCK[1]):
                        for tx in range(BLOCK[0]):
                            block = i // int(np.prod(BLOCK))
                            out[i] = x[i] + 1000 * block
                            who[i] = tx | ty << 4 | tz << 8 | bx << 12 | by << 16 | bz << 20
                            i += 1
    return [x, out, who]
