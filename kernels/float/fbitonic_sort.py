"""Bitonic sort of 16 floats in shared memory on 3 blocks of 16 threads, by fminf/fmaxf and by
compare-and-select: signed zeros (-0 < +0 for min/max, equal for a comparison), subnormals,
+-inf, duplicates and NaNs with payloads (min/max drop a NaN against a number and give the
canonical NaN for two; compare-and-select never swaps on a NaN and keeps its bits)."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import fmax, fmin, from_bits  # noqa: E402

KERNEL = "fbitonic_sort"
FEATURES = ["float", "sort", "bitonic", "min-max", "compare-select", "shared-memory", "barrier", "multi-block",
            "multi-warp", "nan", "inf", "subnormal", "signed-zero"]

GRID, BLOCK = 3, 16


def launch():
    rng = np.random.default_rng(3301)
    x = (rng.standard_normal(GRID * BLOCK) * 10).astype(np.float32)
    # block 0: signed zeros, subnormals, infinities, a duplicate; no NaN
    x[0:8] = [0.0, -0.0, 1e-40, -1e-40, np.inf, -np.inf, 2.0**-149, -0.0]
    x[8] = x[9]
    # block 1: one NaN with a payload among numbers, and a -0/+0 pair
    x[16 + 3] = from_bits(0x7FC0_1234)
    x[16 + 7], x[16 + 12] = -0.0, 0.0
    # block 2: two NaNs (a negative one with a payload) and ties
    x[32 + 1] = from_bits(0xFFC0_0042)
    x[32 + 10] = from_bits(0x7F80_0001)           # a signalling-pattern NaN
    x[32 + 4] = x[32 + 5] = x[32 + 14] = np.float32(2.5)
    return (GRID,), (BLOCK,), [x.copy(), x.copy()]


def bitonic(values, compare_exchange):
    """The kernel's network on 16 values: pairs (i, i ^ j) with i ^ j > i, up when i & k == 0."""
    s = list(values)
    k = 2
    while k <= BLOCK:
        j = k >> 1
        while j > 0:
            for i in range(BLOCK):
                p = i ^ j
                if p > i:
                    s[i], s[p] = compare_exchange(s[i], s[p], (i & k) == 0)
            j >>= 1
        k <<= 1
    return s


def by_min_max(a, b, up):
    lo, hi = fmin(a, b), fmax(a, b)
    return (lo, hi) if up else (hi, lo)


def by_compare_select(c, d, up):
    swap = c > d if up else c < d            # np.float32 comparisons: false with a NaN, -0 == +0
    return (d, c) if swap else (c, d)


def reference(minmax, cmpsel):
    out_mm, out_cs = [], []
    for blk in range(GRID):
        part = slice(blk * BLOCK, (blk + 1) * BLOCK)
        out_mm += bitonic(minmax[part], by_min_max)
        out_cs += bitonic(cmpsel[part], by_compare_select)
    return [np.array(out_mm, np.float32), np.array(out_cs, np.float32)]
