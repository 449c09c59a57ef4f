"""ReLU and clamp to [lo, hi] via signed min/max, including INT_MIN/INT_MAX
and values on the bounds."""
import numpy as np

KERNEL = "clamp_relu"
FEATURES = ["elementwise", "multi-block", "early-return"]

LO, HI = -50, 75


def launch():
    rng = np.random.default_rng(106)
    x = rng.integers(-200, 200, 40, dtype=np.int64).astype(np.int32)
    x[:6] = [-2**31, 2**31 - 1, 0, LO, HI, -1]
    return (3,), (16,), [x, np.zeros(40, np.int32), np.zeros(40, np.int32),
                         np.int32(LO), np.int32(HI), np.int32(40)]


def reference(x, relu, clamped, lo, hi, n):
    return [x, np.maximum(x, 0), np.clip(x, lo, hi).astype(np.int32), None, None, None]
