"""Per-block max (fmaxf) and argmax (ties to the lowest index, NaNs last) by __shfl_xor_sync
butterflies within 4-lane warps and a pass over the warps' results in shared memory, then
x - max for every element; 4 blocks of 16 over 60 elements (the last partial, its missing
threads standing in as NaN). Edges: tied maxima, -0/+0 ties, NaNs with payloads among
numbers, +-inf (inf - inf is NaN) and a block of NaNs only (canonical NaN max)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import canon, fmax, from_bits  # noqa: E402

KERNEL = "fargmax_shfl"
FEATURES = ["float", "argmax", "max", "reduction", "shuffle-xor", "butterfly", "shared-memory", "barrier",
            "multi-block", "multi-warp", "partial-block", "nan", "inf", "signed-zero", "bit-cast"]

N, GRID, BLOCK, WARP = 60, 4, 16, 4
PAD = from_bits(0x7FFF_FFFF)


def launch():
    rng = np.random.default_rng(3302)
    x = (rng.standard_normal(N) * 4).astype(np.float32)
    # block 0: the max twice, the later copy in an earlier lane of its warp
    x[0:16] = np.minimum(x[0:16], np.float32(9.0))
    x[13], x[6] = 9.5, 9.5
    # block 1: nothing positive, -0 before +0 (the max is +0, the argmax the -0), NaNs
    x[16:32] = -np.abs(x[16:32]) - np.float32(1)
    x[16 + 2] = from_bits(0x7FC0_BEEF)
    x[16 + 5], x[16 + 9] = -0.0, 0.0
    x[16 + 12] = from_bits(0xFFC0_0001)
    x[16 + 14] = -1e-40
    # block 2: +inf twice and -inf (inf - inf = NaN), a NaN in lane 0
    x[32], x[32 + 7], x[32 + 11], x[32 + 3] = from_bits(0x7FA0_0000), np.inf, np.inf, -np.inf
    # block 3 (12 of 16 threads): NaNs only, several payloads
    x[48:60] = [from_bits(0x7FC0_0000 | k) if k % 3 else from_bits(0xFF80_0000 | (k + 1)) for k in range(12)]
    return (GRID,), (BLOCK,), [x, np.zeros(N, np.float32), np.zeros(GRID, np.float32), np.full(GRID, -1, np.int32),
                               np.int32(N)]


def beats(ov, oi, v, i):
    return bool(ov > v or (ov == v and oi < i) or (np.isnan(v) and (not np.isnan(ov) or oi < i)))


def butterfly(lanes, combine):
    """lanes[l] after combining with lane l ^ mask for mask 1, 2 (every lane reads the old values)."""
    for mask in (1, 2):
        lanes = [combine(lanes[l], lanes[l ^ mask]) for l in range(WARP)]
    return lanes


def pick(mine, other):
    return other if beats(other[0], other[1], mine[0], mine[1]) else mine


def reference(x, centred, bmax, barg, n):
    centred, bmax, barg = centred.copy(), bmax.copy(), barg.copy()
    for blk in range(GRID):
        idx = list(range(blk * BLOCK, (blk + 1) * BLOCK))
        v = [x[i] if i < n else PAD for i in idx]
        wmax, wbest = [], []
        for w in range(BLOCK // WARP):
            lanes = slice(w * WARP, (w + 1) * WARP)
            wmax.append(butterfly(v[lanes], fmax)[0])
            wbest.append(butterfly(list(zip(v[lanes], idx[lanes])), pick)[0])
        m, best = wmax[0], wbest[0]
        for w in range(1, BLOCK // WARP):
            m = fmax(m, wmax[w])
            best = pick(best, wbest[w])
        for t, i in enumerate(idx):
            if i < n:
                with np.errstate(invalid="ignore"):
                    centred[i] = canon(v[t] - m)
        bmax[blk], barg[blk] = m, best[1]
    return [x, centred, bmax, barg, None]
