"""Decode speed, stock forward vs the exact fast path: now `qgpu bench` (qwengpu/bench.py), which
runs several kernels side by side. This script stays as a one-kernel shorthand for it:

    .venv/bin/python benchmarks/decode_speed.py [--kernel dot] [--dtype float32] [--stock-tokens 8]
        [--model DIR] [--json]
    # the same as: qgpu bench --kernels dot --dtype float32 --stock-tokens 8 [--model DIR] [--json]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu import bench  # noqa: E402


def kernel_launch(name: str):
    """(program, grid, block, params, memory) of a suite kernel, lowered for the model engine."""
    L = bench.kernel_launch(name).launch
    return L.program, L.grid, L.block, L.params, L.memory.copy()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="dot")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--stock-tokens", type=int, default=bench.DEFAULT_STOCK_TOKENS)
    ap.add_argument("--model", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from qwengpu.cli import app
    cli_args = ["bench", "--kernels", args.kernel, "--dtype", args.dtype, "--stock-tokens", str(args.stock_tokens)]
    cli_args += (["--model", args.model] if args.model else []) + (["--json"] if args.json else [])
    return app(cli_args, standalone_mode=False) or 0


if __name__ == "__main__":
    sys.exit(main())
