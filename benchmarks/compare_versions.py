"""Two versions of the machine side by side on this machine: an earlier commit (built in a git
worktree of its own) and the working tree. For each, the compiled machine's shape
(benchmarks/machine_shape.py) and the whole suite in the stand-in merged model, batched, with
replay (benchmarks/suite_batched.py), one after the other; then a markdown report.

    .venv/bin/python benchmarks/compare_versions.py --base 13f88b4 [--max-batch 8] [--json]

Each tree builds its own stand-in merged model first (a warm-up run of `dot`), so the suite's
wall time compares decoding, not building. The base worktree is kept in /tmp for reruns.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worktree(rev: str) -> Path:
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    path = Path(f"/tmp/qwengpu-base-{sha}")
    if not path.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True, capture_output=True)
    return path


def run(tree: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{tree}: {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def measure(tree: Path, max_batch: int) -> dict:
    print(f"{tree}: machine shape, warm-up, suite ...", file=sys.stderr, flush=True)
    shape = json.loads(run(tree, "benchmarks/machine_shape.py", "--json"))
    run(tree, "benchmarks/suite_batched.py", "-k", "dot", "--max-batch", "1")      # builds the merged model
    lines = [json.loads(l) for l in run(tree, "benchmarks/suite_batched.py", "--max-batch", str(max_batch)).splitlines()]
    kernels = {l["name"]: l for l in lines if "name" in l}
    return {"shape": shape, "kernels": kernels, "summary": next(l for l in lines if l.get("summary"))}


def report(base: dict, new: dict, base_rev: str) -> str:
    bk, nk = base["kernels"], new["kernels"]
    out = [f"| kernel | tokens at {base_rev} | tokens now | ratio |", "| --- | --- | --- | --- |"]
    for name in sorted(bk, key=lambda n: -bk[n]["tokens"]):
        b, n = bk[name]["tokens"], nk[name]["tokens"]
        out.append(f"| {name} | {b:,} | {n:,} | {n / b:.2f} |")

    def per_instruction(k):
        return statistics.median(r["tokens"] / r["instructions"] for r in k.values())

    bs, ns = base["summary"], new["summary"]
    b2, n2 = base["shape"]["qwen3.5-2b"], new["shape"]["qwen3.5-2b"]
    rows = [("kernels exact with replay", f"{bs['passed']}/{bs['kernels']}", f"{ns['passed']}/{ns['kernels']}"),
            ("suite generated tokens", f"{bs['tokens']:,}", f"{ns['tokens']:,}"),
            ("largest kernel", f"{max(r['tokens'] for r in bk.values()):,}", f"{max(r['tokens'] for r in nk.values()):,}"),
            ("dot", f"{bk['dot']['tokens']}", f"{nk['dot']['tokens']}"),
            ("median tokens per instruction", f"{per_instruction(bk):.2f}", f"{per_instruction(nk):.2f}"),
            ("suite wall s (load excluded)", f"{bs['wall_s'] - bs['load_s']:.1f}", f"{ns['wall_s'] - ns['load_s']:.1f}"),
            ("aggregate tokens/s", f"{bs['aggregate_tok_s']:.0f}", f"{ns['aggregate_tok_s']:.0f}"),
            ("circuit layers (2B host)", b2["layers"], n2["layers"]),
            ("C / merged width (2B host)", f"{b2['C']} / {b2['merged_width']}", f"{n2['C']} / {n2['merged_width']}"),
            ("GPU tokens", f"{b2['gpu_tokens']:,}", f"{n2['gpu_tokens']:,}"),
            ("max MLP neurons in a layer", max(b2["neurons"]), max(n2["neurons"])),
            ("max GDN heads in a layer", max(b2["heads"]), max(n2["heads"]))]
    summary = [f"| | {base_rev} | now |", "| --- | --- | --- |"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    layers = [f"| layer | neurons {base_rev} | neurons now | heads {base_rev} | heads now |",
              "| --- | --- | --- | --- | --- |"]
    for i in range(max(len(b2["neurons"]), len(n2["neurons"]))):
        cell = lambda s, k: s[k][i] if i < len(s[k]) else ""
        layers.append(f"| L{i} | {cell(b2, 'neurons')} | {cell(n2, 'neurons')} | {cell(b2, 'heads')} | {cell(n2, 'heads')} |")
    return "\n".join(summary + [""] + layers + [""] + out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the earlier commit")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = measure(worktree(args.base), args.max_batch)
    new = measure(ROOT, args.max_batch)
    if args.json:
        print(json.dumps({"base": base, "new": new}, indent=1))
    else:
        print(report(base, new, args.base))


if __name__ == "__main__":
    main()
