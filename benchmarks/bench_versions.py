"""`qgpu bench` in earlier commits and in the working tree, alternating, on this machine: the
fast path's tokens/s of each version on its own merged model (each tree builds its own stand-in
merged model on first use), side by side in one run, then the ratios to the first base.

    .venv/bin/python benchmarks/bench_versions.py --base 66bc802 [--base 76d0641] [--rounds 2] [--json]

Each round runs every version once, in the order given, the working tree last; `qgpu bench`'s
stock path decodes only 2 tokens a kernel (it checks that they equal the fast path's).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_versions import ROOT, worktree  # noqa: E402

BENCH = ("-c", "import sys; from qwengpu.cli import app; sys.argv[0] = 'qgpu'; app()",
         "bench", "--json", "--stock-tokens", "2")


def bench(tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, *BENCH], cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{tree}: qgpu bench failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", action="append", required=True, help="an earlier commit (repeatable)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    trees = {rev: worktree(rev) for rev in args.base} | {"now": ROOT}
    runs: dict[str, list[dict]] = {rev: [] for rev in trees}
    for r in range(args.rounds):
        for rev, tree in trees.items():
            print(f"round {r + 1}: {rev} ...", file=sys.stderr, flush=True)
            runs[rev].append(bench(tree))
    if args.json:
        print(json.dumps(runs, indent=1))
        return
    first = args.base[0]
    print("| version | " + " | ".join(f"round {r + 1} fast tok/s" for r in range(args.rounds))
          + f" | ratio to {first} | identical tokens, replay exact |")
    print("| --- |" + " --- |" * (args.rounds + 2))
    for rev, rs in runs.items():
        ratios = ", ".join(f"{x['fast_tok_s'] / b['fast_tok_s']:.2f}" for x, b in zip(rs, runs[first]))
        ok = all(x["identical_tokens"] and x["replay_exact"] for x in rs)
        print(f"| {rev} | " + " | ".join(f"{x['fast_tok_s']:.0f}" for x in rs) + f" | {ratios} | {ok} |")


if __name__ == "__main__":
    main()
