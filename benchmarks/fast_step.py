"""Two step implementations of the fast path side by side in one run, on the same model load: the
working tree's C step (native.c) against its torch ops (`native=False`), or with `--base REV`
against the C step of commit REV (its native.c and native.py, loaded beside this tree's). Per
kernel, each runs the whole launch with the replay check, alternating; the token streams must
be equal.

    .venv/bin/python benchmarks/fast_step.py [--kernels dot,nested_divergence,...] [--rounds 2] [--base REV] [--json]

Rates are qgpu bench's fast_tok_s basis: decode steps (generated tokens after the prefill's)
over their wall time, the prefill timed apart; the best round of each.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qwengpu.bench import DEFAULT_KERNELS, kernel_launch, run_fast  # noqa: E402


def native_at(rev: str, fast, where: Path):
    """FastModel `fast` with commit REV's C step: its native.py imported from a copy under `where`
    (its library cache beside it), its NativeStep built on `fast`'s matrices."""
    pkg = where / "qwengpu" / "fast"
    pkg.mkdir(parents=True)
    for name in ("native.py", "native.c"):
        source = subprocess.run(["git", "show", f"{rev}:qwengpu/fast/{name}"], cwd=ROOT, check=True,
                                capture_output=True).stdout
        (pkg / name).write_bytes(source)
    spec = importlib.util.spec_from_file_location(f"native_{rev}", pkg / "native.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NativeStep(fast)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=",".join(DEFAULT_KERNELS))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--base", help="compare with this commit's C step instead of the torch ops")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from qwengpu.bench import load
    fast, machine = load(None, args.dtype, "c")
    other = args.base or "torch"
    with tempfile.TemporaryDirectory() as tmp:
        steps = {"c": fast.native, other: native_at(args.base, fast, Path(tmp)) if args.base else None}
        rows = [compare(name, fast, machine, steps, args.rounds, other) for name in args.kernels.split(",")]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"| kernel | generated tokens | C step tok/s | {other} tok/s | ratio | identical tokens |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['kernel']} | {r['tokens']:,} | {r['c_tok_s']} | {r['other_tok_s']} | {r['ratio']}x | "
              f"{'yes' if r['identical_tokens'] else 'no'} |")


def compare(name: str, fast, machine, steps: dict, rounds: int, other: str) -> dict:
    """One kernel's launch on each step implementation, alternating, `rounds` times each."""
    k = kernel_launch(name)
    best, streams = {}, {}
    for _ in range(rounds):
        for label, step in steps.items():
            fast.native = step
            run, wall, prefill = run_fast(fast, machine, k)
            best[label] = max(best.get(label, 0.0), (run.tokens - 1) / (wall - prefill))
            streams.setdefault(label, list(run.stream))
    fast.native = steps["c"]
    return {"kernel": name, "tokens": len(streams["c"]), "c_tok_s": round(best["c"], 1),
            "other": other, "other_tok_s": round(best[other], 1), "ratio": round(best["c"] / best[other], 2),
            "identical_tokens": streams["c"] == streams[other]}


if __name__ == "__main__":
    main()
