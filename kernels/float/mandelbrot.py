"""Mandelbrot: 16 points of the plane, a thread each (2 blocks of 8), a data-dependent escape
loop (|z|^2 > 4) of at most 32 steps; the iteration counts and the final z, the reference
iterating in float32 with the kernel's op order."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "mandelbrot"
FEATURES = ["float", "mandelbrot", "data-dependent-loop", "divergence", "multi-block"]

MAX_ITER = 32


def launch():
    re = np.linspace(-2.0, 0.5, 4, dtype=np.float32)
    im = np.linspace(-1.1, 1.1, 4, dtype=np.float32)
    cr = np.tile(re, 4).astype(np.float32)
    ci = np.repeat(im, 4).astype(np.float32)
    cr[5], ci[5] = -0.75, 0.1              # near the boundary: many steps
    cr[6], ci[6] = -0.1, 0.65
    return (2,), (8,), [cr, ci, np.full(16, -1, np.int32), np.zeros(16, np.float32), np.zeros(16, np.float32),
                        np.int32(MAX_ITER)]


def reference(cr, ci, count, zr_out, zi_out, max_iter):
    counts, zrs, zis = [], [], []
    two, four = f32(2), f32(4)
    for p in range(len(cr)):
        zr = zi = f32(0)
        k = 0
        while k < max_iter:
            zr2, zi2 = zr * zr, zi * zi
            if zr2 + zi2 > four:
                break
            zi = two * zr * zi + ci[p]
            zr = zr2 - zi2 + cr[p]
            k += 1
        counts.append(k)
        zrs.append(zr)
        zis.append(zi)
    return [cr, ci, np.array(counts, np.int32), np.array(zrs, np.float32), np.array(zis, np.float32), None]
