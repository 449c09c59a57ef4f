"""What a paged word costs (docs/machine.md, step 28): generated tokens of kernels whose arrays sit
in the lane words (below isa.LANE_WORDS, read by a warp in one pass) or above them (read lane by
lane: LD tokens), from the interpreter's expected streams (protocol.expected_stream: the tokens
the model must write, replay-checked in the model by tests/test_paged_memory.py), without the
copy-out (which carries lane words only). No model.

    .venv/bin/python benchmarks/paged_cost.py [--n 256]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu import Device, isa  # noqa: E402
from qwengpu.driver import protocol  # noqa: E402

# out[i] = in[i] + 1 over n threads; `pad` words in front of the arrays move them above the lane words
COPY = r"""extern "C" __global__ void k(const int *pad, const int *in, int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] + 1;
}"""
# the same through shared memory: each thread stores its word at `at + t`, then reads its neighbour's
SHARED = r"""extern "C" __global__ void k(const int *in, int *out, int at) {
    __shared__ int buf[2048];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    buf[at + t] = in[i];
    __syncthreads();
    out[i] = buf[at + (t + 1) % blockDim.x];
}"""


def tokens(src: str, args: list, n: int) -> int:
    fn = Device().compile(src).get_function("k")
    block = isa.MACHINE_BLOCK_THREADS
    launch = fn.launch((n // block, 1, 1), (block, 1, 1), args)
    launch.copy_out = []        # the kernel's tokens alone: the copy-out covers lane words only (copyout.py)
    return len(protocol.expected_stream(launch).tokens)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="threads (a multiple of 16)")
    n = ap.parse_args().n
    rng = np.random.default_rng(0)
    words = {"small": rng.integers(0, 4096, n).astype(np.int32),
             "random": rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)}
    print(f"| {n} threads | lane words | paged words | paged / lane |\n| --- | --- | --- | --- |")
    for kind, data in words.items():
        out = np.zeros(n, np.int32)
        low = tokens(COPY, [np.zeros(1, np.int32), data, out], n)
        high = tokens(COPY, [np.zeros(isa.LANE_GLOBAL_WORDS, np.int32), data, out], n)
        print(f"| global copy, {kind} words | {low:,} ({low / n:.1f} a word) | {high:,} ({high / n:.1f} a word) "
              f"| {high / low:.2f} |")
        low = tokens(SHARED, [data, out, 0], n)
        high = tokens(SHARED, [data, out, 2048 - isa.MACHINE_BLOCK_THREADS], n)
        print(f"| shared exchange, {kind} words | {low:,} ({low / n:.1f} a word) | {high:,} ({high / n:.1f} a word) "
              f"| {high / low:.2f} |")


if __name__ == "__main__":
    main()
