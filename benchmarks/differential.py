"""Differential test: random integer CUDA kernels on qwengpu against the same source compiled
as host C++ (qwengpu/testing/difftest.py, docs/testing.md). Exit 1 on any mismatch or error.

    .venv/bin/python benchmarks/differential.py --programs 3000 --seed 1 \
        [--engine interp|model] [--frontend clang|nvrtc|both] [--json] [--small] [--ubsan]

Program seeds are seed, seed+1, ...: a failure of program seed P reproduces with
`--seed P --programs 1` (same --frontend). Kernels a machine limit refuses (registers,
ROM) are counted as refused and skipped.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402

from qwengpu.testing import difftest  # noqa: E402


def options(small: bool, noinline: bool, floats: bool = False, max_threads: int | None = None) -> difftest.GenOptions:
    """--small: short kernels on few threads (the model engine decodes every instruction);
    --floats: fp32 programs (every float operation an intrinsic: docs/testing.md); --max-threads:
    blocks of up to that many threads (over 16, whole tiles: docs/lowering.md "Thread tiles")."""
    kw = {"noinline": noinline, "floats": floats} | ({"max_threads": max_threads} if max_threads else {})
    return difftest.GenOptions.small(**kw) if small else difftest.GenOptions(**kw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--engine", choices=["interp", "model"], default="interp")
    ap.add_argument("--frontend", choices=["clang", "nvrtc", "both"], default="both")
    ap.add_argument("--small", action="store_true", help="small kernels (the default on the model engine)")
    ap.add_argument("--inline-only", action="store_true", help="only __forceinline__ helpers (no PTX calls)")
    ap.add_argument("--ubsan", action="store_true", help="build the oracle with UBSan (checks the generator)")
    ap.add_argument("--floats", action="store_true", help="fp32 programs (every float operation an intrinsic)")
    ap.add_argument("--max-threads", type=int, default=None, help="threads a block, at most (default 16; 4 with --small)")
    ap.add_argument("--batch", type=int, default=100, help="programs per host compile")
    ap.add_argument("--show", type=int, default=5, help="failure reports to print in full")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    frontends = difftest.FRONTEND_CHOICES if args.frontend == "both" else (args.frontend,)
    opts = options(args.small or args.engine == "model", not args.inline_only, args.floats, args.max_threads)
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                  console=console, disable=args.json) as bar:
        task = bar.add_task("differential", total=args.programs, status="")

        def progress(s: difftest.Summary) -> None:
            bar.update(task, completed=s.programs + s.errors,
                       status=f"mismatches {s.mismatches}  errors {s.errors}  refused {s.refused}")

        summary = difftest.run_programs(args.programs, args.seed, engine=args.engine, frontends=frontends,
                                        opts=opts, batch=args.batch, progress=progress, sanitize=args.ubsan)
    if args.json:
        print(json.dumps(summary.as_dict(), indent=2))
    else:
        for f in summary.failures[:args.show]:
            print(f.report(), end="\n\n")
        configs = ", ".join(f"{k}: {v}" for k, v in sorted(summary.by_config.items()))
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(summary.refusal_reasons.items())) or "none"
        print(f"{summary.programs} programs compared on {args.engine} ({configs}) in {summary.seconds:.1f} s")
        print(f"mismatches {summary.mismatches}, errors {summary.errors}, "
              f"refused {summary.refused} ({100 * summary.refusal_rate:.1f}%: {reasons})")
        if summary.failures:
            print("failing seeds: " + " ".join(str(f.program.seed) for f in summary.failures))
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
