"""One n-body step for 8 bodies in 2-D (one block of 8): softened inverse-square forces with
1 / sqrtf (correctly rounded), then velocity and position updates; the reference does each
float32 op in the kernel's order."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32  # noqa: E402

KERNEL = "nbody"
FEATURES = ["float", "n-body", "sqrt", "loop", "divergence", "multi-warp"]

N = 8


def launch():
    rng = np.random.default_rng(3212)
    px, py = (rng.uniform(-10, 10, N).astype(np.float32) for _ in range(2))
    vx, vy = (rng.uniform(-1, 1, N).astype(np.float32) for _ in range(2))
    mass = rng.uniform(0.5, 5, N).astype(np.float32)
    px[1], py[1] = px[0] + np.float32(0.01), py[0]          # a close pair: softening dominates
    return (1,), (N,), [px, py, vx, vy, mass, np.zeros(4 * N, np.float32), np.int32(N), f32(0.01), f32(0.01)]


def reference(px, py, vx, vy, mass, out, n, dt, eps):
    result = []
    one = f32(1)
    for i in range(n):
        xi, yi = px[i], py[i]
        ax = ay = f32(0)
        for j in range(n):
            if j == i:
                continue
            dx, dy = px[j] - xi, py[j] - yi
            inv = one / np.sqrt(dx * dx + dy * dy + eps)
            s = mass[j] * (inv * inv * inv)
            ax = ax + dx * s
            ay = ay + dy * s
        nvx, nvy = vx[i] + ax * dt, vy[i] + ay * dt
        result += [xi + nvx * dt, yi + nvy * dt, nvx, nvy]
    return [px, py, vx, vy, mass, np.array(result, np.float32), None, None, None]
