"""The fast path's two step implementations side by side in one run: native.c (`native=True`)
against its torch ops (`native=False`), on the same model load. Per kernel, each runs the whole
launch with the replay check, alternating C, torch, C, torch; the token streams must be equal.

    .venv/bin/python benchmarks/fast_step.py [--kernels dot,nested_divergence,...] [--rounds 2] [--json]

Rates are qgpu bench's fast_tok_s basis: decode steps (generated tokens after the prefill's)
over their wall time, the prefill timed apart; the best round of each.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu.bench import DEFAULT_KERNELS, kernel_launch, run_fast  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=",".join(DEFAULT_KERNELS))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from qwengpu.bench import load
    from qwengpu.fast import FastModel
    model, c_step, machine = load(None, args.dtype, "c")
    steps = {"c": c_step, "torch": FastModel(model, native=False)}
    rows = []
    for name in args.kernels.split(","):
        k = kernel_launch(name)
        best, streams = {}, {}
        for _ in range(args.rounds):
            for label, fast in steps.items():
                run, wall, prefill = run_fast(fast, machine, k)
                rate = (run.tokens - 1) / (wall - prefill)
                best[label] = max(best.get(label, 0.0), rate)
                streams.setdefault(label, list(run.stream))
        rows.append({"kernel": name, "tokens": len(streams["c"]), "c_tok_s": round(best["c"], 1),
                     "torch_tok_s": round(best["torch"], 1), "ratio": round(best["c"] / best["torch"], 2),
                     "identical_tokens": streams["c"] == streams["torch"]})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| kernel | generated tokens | C step tok/s | torch ops tok/s | ratio | identical tokens |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['kernel']} | {r['tokens']:,} | {r['c_tok_s']} | {r['torch_tok_s']} | {r['ratio']}x | "
              f"{'yes' if r['identical_tokens'] else 'no'} |")


if __name__ == "__main__":
    main()
