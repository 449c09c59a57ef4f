"""The launch-argument syntax of `qgpu run --arg/--grid/--block`, which the chat's gpu_cuda tool
reads too:

    5, -3, 0x1f        a 32-bit scalar (signed or unsigned range)
    i32:[1,2,3]        an int32 array; u32:[...] for uint32; [1,2,3] means i32
    i32:zeros(8)       eight zeros; u32:range(8) is 0..7; i32:full(8,-1) is eight -1s
    4, 4,2, 2x2x1      a grid or block of 1 to 3 dimensions
"""
from __future__ import annotations

import re

import numpy as np

from qwengpu.errors import QwenGpuError

DTYPES = {"i32": np.int32, "u32": np.uint32}


class ArgSyntaxError(QwenGpuError):
    """A --arg, --grid or --block value that cannot be read."""


def parse_arg(text: str):
    """One --arg value -> np.ndarray or int (syntax above)."""
    t = text.strip()
    dtype_name, sep, body = t.partition(":")
    if sep and dtype_name in DTYPES:
        dtype = DTYPES[dtype_name]
    elif sep:
        raise ArgSyntaxError(f"--arg {text!r}: unknown type {dtype_name!r}; use i32 or u32")
    else:
        dtype, body = None, t
    body = body.replace(" ", "")
    try:
        if body.startswith("["):
            if not body.endswith("]"):
                raise ValueError("missing ]")
            values = [int(v, 0) for v in body[1:-1].split(",") if v]
            return _array(values, dtype or np.int32, text)
        call = re.fullmatch(r"(zeros|range|full)\(([^)]*)\)", body)
        if call:
            nums = [int(v, 0) for v in call[2].split(",") if v]
            values = {"zeros": lambda n: [0] * n, "range": lambda n: list(range(n)),
                      "full": lambda n, v: [v] * n}[call[1]](*nums)
            return _array(values, dtype or np.int32, text)
        value = int(body, 0)
    except (ValueError, TypeError) as e:
        raise ArgSyntaxError(f"--arg {text!r} is not a scalar (5, 0x1f), an array (i32:[1,2,3], u32:zeros(8), "
                             f"i32:range(4), i32:full(4,-1)) ({e})") from None
    if dtype is None:
        return value                     # range-checked by the launch
    return _array([value], dtype, text)[0]


def _array(values: list[int], dtype, text: str) -> np.ndarray:
    info = np.iinfo(dtype)
    bad = [v for v in values if not info.min <= v <= info.max]
    if bad:
        raise ArgSyntaxError(f"--arg {text!r}: {bad[0]} does not fit in {np.dtype(dtype).name}")
    return np.array(values, dtype=dtype)


def parse_dims(name: str, text: str) -> tuple[int, ...]:
    """'2' or '4,2' or '2x2x1' -> a tuple of 1-3 ints."""
    parts = re.split(r"[,x]", text.strip())
    if not 1 <= len(parts) <= 3 or not all(p.strip().isdigit() for p in parts):
        raise ArgSyntaxError(f"--{name} {text!r}: give 1 to 3 positive integers, e.g. 4 or 4,2")
    return tuple(int(p) for p in parts)
