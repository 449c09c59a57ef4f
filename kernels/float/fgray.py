"""RGB to grayscale on 3 blocks of 16 over 40 packed 0x00BBGGRR pixels: bytes to float, the
weighted sum 0.299 r + 0.587 g + 0.114 b in float32 in the kernel's order, the float luma,
its byte rounded to nearest and toward zero, and a contrast/brightness adjustment converted
by __float2uint_rn (negatives saturate to 0) and clamped to 255. Pixels include black,
white, pure channels and greys whose luma lands near .5."""
import sys
from pathlib import Path

import numpy as np

HERE = str(Path(__file__).parent)
if HERE not in sys.path:           # _fref.py, the shared host references, beside this file
    sys.path.insert(0, HERE)
from _fref import f32, to_int  # noqa: E402

KERNEL = "fgray"
FEATURES = ["float", "elementwise", "image", "int-to-float", "float-to-unsigned", "saturation", "multi-block",
            "multi-warp", "partial-block", "early-return"]

N = 40


def pack(r, g, b):
    return r | g << 8 | b << 16


def launch():
    rng = np.random.default_rng(3304)
    px = rng.integers(0, 256, (N, 3))
    fixed = [(0, 0, 0), (255, 255, 255), (255, 0, 0), (0, 255, 0), (0, 0, 255), (128, 128, 128),
             (1, 0, 0), (0, 1, 0), (0, 0, 1), (127, 128, 129), (254, 255, 255), (10, 200, 30)]
    px[:len(fixed)] = fixed
    rgb = np.array([pack(*p) for p in px], np.uint32)
    rgb[5] |= 0xFF00_0000                       # an alpha byte the kernel ignores
    return (3,), (16,), [rgb, np.zeros(N, np.float32), np.zeros(2 * N, np.uint32), np.zeros(N, np.uint32),
                         f32(1.7), f32(-20.25), np.int32(N)]


def reference(rgb, gray, luma, adjusted, contrast, brightness, n):
    gray, luma, adjusted = gray.copy(), luma.copy(), adjusted.copy()
    wr, wg, wb = f32(0.299), f32(0.587), f32(0.114)
    for i in range(n):
        p = int(rgb[i])
        r, g, b = f32(p & 0xFF), f32(p >> 8 & 0xFF), f32(p >> 16 & 0xFF)
        y = wr * r + wg * g + wb * b                 # ((wr*r) + (wg*g)) + (wb*b), each rounded
        gray[i] = y
        luma[2 * i] = to_int(y, "rn", signed=False)
        luma[2 * i + 1] = to_int(y, "rz", signed=False)
        a = (y - f32(128)) * contrast + f32(128) + brightness
        adjusted[i] = min(to_int(a, "rn", signed=False), 255)
    return [rgb, gray, luma, adjusted, None, None, None]
