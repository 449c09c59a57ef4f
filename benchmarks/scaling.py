"""Scaling on the exact fast path (replay checked): generated tokens, passes and wall time against
dynamic instructions (benchmarks/kernels/scaling_loop.cu, a loop of n trips per lane), and
prompt tokens, prefill and decode against the global words a launch carries
(benchmarks/kernels/scaling_memory.cu, M words of data of which the kernel touches two).

    .venv/bin/python benchmarks/scaling.py [--trips 1,4,16,64,256] [--words 16,64,256,1024]
        [--model DIR] [--markdown] > scaling.jsonl

One JSON line per launch as it finishes; --markdown prints the two tables of docs/performance.md
("Scaling") at the end instead.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu import bench  # noqa: E402
from qwengpu.api import Device  # noqa: E402
from qwengpu.launch import Launch  # noqa: E402

KERNELS = Path(__file__).resolve().parent / "kernels"
BLOCK = 4                       # one warp


def program(name: str):
    src = (KERNELS / f"{name}.cu").read_text()
    return Device("model").compile(src, filename=f"{name}.cu").get_function(name).program


def loop_launch(trips: int) -> bench.KernelLaunch:
    prog = program("scaling_loop")
    return bench.KernelLaunch(f"scaling_loop n={trips}", Launch.build(prog, 1, BLOCK, [np.zeros(BLOCK, np.int32), trips]))


def memory_launch(words: int) -> bench.KernelLaunch:
    data = np.random.default_rng(words).integers(-2**31, 2**31, words).astype(np.int32)   # 4 bytes a word
    prog = program("scaling_memory")
    return bench.KernelLaunch(f"scaling_memory M={words}", Launch.build(prog, 1, BLOCK, [data, words]))


def measure(fast, machine, k: bench.KernelLaunch) -> dict:
    from qwengpu.driver import protocol
    prompt_tokens = len(protocol.prompt(k.launch))       # what run_fast prefills (copy-out included)
    run, wall, prefill = bench.run_fast(fast, machine, k)
    decode = wall - prefill
    return {"launch": k.name, "prompt_tokens": prompt_tokens, "prefill_s": round(prefill, 2),
            "tokens": run.tokens, "passes": run.passes, "instructions": run.instructions,
            "decode_s": round(decode, 2), "wall_s": round(wall, 2), "tok_s": round(run.tokens / wall, 1),
            "decode_tok_s": round((run.tokens - 1) / decode, 1) if decode > 0 else None}


def markdown(loops: list[dict], mems: list[dict]) -> str:
    out = ["| trips | instructions | passes | generated tokens | tokens / instruction | prefill s | decode s "
           "| wall s | tokens/s (launch) |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in loops:
        out.append(f"| {r['launch'].split('=')[1]} | {r['instructions']:,} | {r['passes']:,} | {r['tokens']:,} "
                   f"| {r['tokens'] / r['instructions']:.1f} | {r['prefill_s']:.1f} | {r['decode_s']:.1f} "
                   f"| {r['wall_s']:.1f} | {r['tok_s']:.1f} |")
    out += ["", "| global words M | prompt tokens | prefill s | prompt tokens/s | generated tokens | decode s "
            "| wall s |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in mems:
        out.append(f"| {r['launch'].split('=')[1]} | {r['prompt_tokens']:,} | {r['prefill_s']:.1f} "
                   f"| {r['prompt_tokens'] / r['prefill_s']:.0f} | {r['tokens']:,} | {r['decode_s']:.1f} "
                   f"| {r['wall_s']:.1f} |")
    return "\n".join(out)


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trips", type=ints, default=[1, 4, 16, 64, 256])
    ap.add_argument("--words", type=ints, default=[16, 64, 256, 1024])
    ap.add_argument("--model", default=None)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    fast, machine = bench.load(args.model, "float32")
    results = {"loop": [], "memory": []}
    for kind, sizes, make in (("loop", args.trips, loop_launch), ("memory", args.words, memory_launch)):
        for n in sizes:
            row = measure(fast, machine, make(n))
            results[kind].append(row)
            print(json.dumps(row), flush=True, file=sys.stderr if args.markdown else sys.stdout)
    if args.markdown:
        print(markdown(results["loop"], results["memory"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
