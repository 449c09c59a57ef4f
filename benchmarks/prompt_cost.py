"""What an input array costs in the launch prompt: prompt tokens of a copy kernel's launch for input
arrays of N words, for zeros, small integers (below 4,096: one 12-bit part), negative integers
(-4,096..-1), short floats (4 significant bits) and random 32-bit words; the extra tokens a
word over an empty input are the cost of that kind of word. No model is loaded.

    .venv/bin/python benchmarks/prompt_cost.py [--words 64,256,896]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu import Device  # noqa: E402
from qwengpu.driver import protocol  # noqa: E402

COPY = r"""extern "C" __global__ void k(const unsigned *in, unsigned *out) { out[threadIdx.x] = in[threadIdx.x]; }"""


def kinds(n: int, rng) -> dict[str, np.ndarray]:
    return {"zeros": np.zeros(n, np.uint32),
            "small integers": rng.integers(0, 4096, n).astype(np.uint32),
            "negative integers": rng.integers(-4096, 0, n).astype(np.int32).view(np.uint32),
            "short floats": (rng.integers(1, 16, n) * 2.0 ** rng.integers(-8, 8, n)).astype(np.float32).view(np.uint32),
            "random words": rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", default="64,256,896")
    args = ap.parse_args()
    fn = Device("model", model="<not loaded>").compile(COPY).get_function("k")

    def prompt_tokens(data: np.ndarray) -> int:
        return len(protocol.prompt(fn.launch(1, 4, [data, np.zeros(4, np.uint32)])))

    base = prompt_tokens(np.zeros(1, np.uint32))
    rng = np.random.default_rng(0)
    print(f"| input words | {' | '.join(kinds(1, rng))} |")
    print("| --- |" + " --- |" * len(kinds(1, rng)))
    for n in map(int, args.words.split(",")):
        cells = [f"{prompt_tokens(a):,} ({(prompt_tokens(a) - base) / n:.2f} a word)" for a in kinds(n, rng).values()]
        print(f"| {n:,} | {' | '.join(cells)} |")
    print(f"(an input of one zero word: {base} prompt tokens)")


if __name__ == "__main__":
    main()
