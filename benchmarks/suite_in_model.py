"""Every suite kernel in the stand-in merged model, with the replay check, smallest first;
one JSON line per kernel as it finishes (about 10 minutes for the whole suite on 2 CPU cores
with the C step; hours with --stock).

    .venv/bin/python benchmarks/suite_in_model.py [--stock] [--dtype float32|bfloat16]
        [-k PATTERN] [--done FILE.jsonl] > results.jsonl

`--done` skips kernels already in an earlier output (to resume). Kernels are ordered by the
interpreter's instruction count (the model engine's program: division micro-coded).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu import interp  # noqa: E402
from qwengpu.api import Device  # noqa: E402
from qwengpu.suite import discover, load_spec, run_case  # noqa: E402


def size(case, device) -> int:
    spec = load_spec(case)
    grid, block, args = spec.launch()
    fn = device.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    launch = fn.launch(grid, block, args)
    return interp.run(fn.program, launch.grid, launch.block, launch.params, launch.memory).instructions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stock", action="store_true", help="the stock transformers forward (very slow)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("-k", dest="pattern", default=None)
    ap.add_argument("--done", type=Path, default=None)
    args = ap.parse_args()
    device = Device("model", dtype=args.dtype, check="replay", max_tokens=1_000_000, fast=not args.stock)
    done = {json.loads(line)["name"] for line in args.done.read_text().splitlines()} if args.done else set()
    cases = sorted((c for c in discover(pattern=args.pattern) if c.name not in done), key=lambda c: size(c, device))
    for case in cases:
        r = run_case(case, device)
        print(json.dumps({"name": r.name, "passed": r.passed, "reason": r.reason[:300], "tokens": r.tokens,
                          "passes": r.passes, "instructions": r.instructions, "seconds": round(r.seconds, 1)}),
              flush=True)


if __name__ == "__main__":
    main()
