"""Suite kernels in a merged model built from a real-layout random base: build, load, run.

    .venv/bin/python benchmarks/fixture_kernels.py [--host qwen3_5_2b_text] [--dir build/fixture-2b]
        [--dtype bfloat16] [--kernels dot,nested_divergence,...] [--stock-tokens K] > results.jsonl
    .venv/bin/python benchmarks/fixture_kernels.py --model build/standin-merged --dtype bfloat16

Without --model: writes DIR/base (the host's published text config cut to 3 GDN + 1 full
attention layers, random weights, the published multimodal layout: model.language_model.*,
model.visual.*, mtp.*, no tokenizer.json) unless it exists, builds DIR/merged with
`qgpu build --base DIR/base --out DIR/merged --dtype DTYPE` (the machine's circuit) unless it
exists, then loads the merged model with stock transformers (`Device(engine="model",
model=DIR/merged, dtype=DTYPE, check="replay")`, fast path) and runs each kernel with every
generated token checked against the interpreter. --stock-tokens K then also decodes the first
K tokens of `dot` with the stock transformers forward (replay-checked; slow).

One JSON line per stage (base, build: seconds and the child's peak RSS; load; kernel; stock).
The base and the build run as child processes so each stage's peak memory is its own.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu.api import Device  # noqa: E402
from qwengpu.errors import ExecutionError, QwenGpuError  # noqa: E402
from qwengpu.suite import discover, load_spec, run_case  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KERNELS = "dot,nested_divergence,pool3_shared,atomic_add_shared,warp_reduce_shfl,vote_ballot_popc"


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def child(args: list[str]) -> dict:
    """Run a child process; its wall time and peak RSS (os.wait4 reports that child's own)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=REPO, stdout=sys.stderr)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"{' '.join(args)} failed with status {status}")
    return {"seconds": round(time.perf_counter() - start, 1), "peak_rss_gb": round(usage.ru_maxrss / 1e6, 2)}


def size_gb(folder: Path) -> float:
    return round(sum(f.stat().st_size for f in folder.glob("*.safetensors")) / 1e9, 2)


def make_base(base: Path, host: str) -> None:
    code = ("import sys; from pathlib import Path; from qwengpu.model.standin import fixture_config, "
            "write_random_base; write_random_base(Path(sys.argv[1]), fixture_config(sys.argv[2]), 'multimodal')")
    emit({"stage": "base", "host": host, "path": str(base),
          **child([sys.executable, "-c", code, str(base), host]), "gb": size_gb(base)})


def make_merged(base: Path, merged: Path, dtype: str) -> None:
    cmd = [sys.executable, "-m", "qwengpu.cli", "build", "--base", str(base), "--out", str(merged), "--dtype", dtype]
    stats = child(cmd)
    cfg = json.loads((merged / "config.json").read_text())
    emit({"stage": "build", "command": "qgpu " + " ".join(cmd[3:]), **stats, "gb": size_gb(merged),
          "hidden_size": cfg["hidden_size"], "layers": cfg["num_hidden_layers"],
          "circuit_layers": cfg["qwengpu"]["circuit_layers"], "vocab_size": cfg["vocab_size"]})


def check_layout(merged: Path) -> dict:
    """What a stock loader sees: a text-only config, no multimodal names, the head (tied or not),
    and the MTP head carried through (mtp.*)."""
    cfg = json.loads((merged / "config.json").read_text())
    index = merged / "model.safetensors.index.json"
    names = list(json.loads(index.read_text())["weight_map"]) if index.is_file() else []
    return {"architectures": cfg["architectures"], "tie_word_embeddings": cfg.get("tie_word_embeddings"),
            "lm_head_stored": "lm_head.weight" in names,
            "multimodal_names": sum("language_model" in n or "visual" in n for n in names),
            "mtp_tensors": sum(n.startswith("mtp.") for n in names)}


def run_kernels(merged: Path, dtype: str, names: list[str]) -> None:
    dev = Device("model", model=merged, dtype=dtype, check="replay", max_tokens=1_000_000)
    start = time.perf_counter()
    dev.model_and_machine()
    emit({"stage": "load", "model": str(merged), "dtype": dtype, "seconds": round(time.perf_counter() - start, 1),
          "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2), **check_layout(merged)})
    cases = {c.name: c for c in discover()}
    for name in names:
        r = run_case(cases[name], dev)
        emit({"stage": "kernel", "name": r.name, "passed": r.passed, "reason": r.reason[:300], "tokens": r.tokens,
              "passes": r.passes, "seconds": round(r.seconds, 1)})


def stock_prefix(merged: Path, dtype: str, tokens: int, name: str = "dot") -> None:
    """The stock transformers forward for the first `tokens` generated tokens, each checked against
    the interpreter's stream: stopping at max_tokens is the expected outcome."""
    dev = Device("model", model=merged, dtype=dtype, check="replay", max_tokens=tokens, fast=False)
    case = next(c for c in discover() if c.name == name)
    spec = load_spec(case)
    grid, block, args = spec.launch()
    fn = dev.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    start, seen = time.perf_counter(), []
    dev.on_token = seen.append
    try:
        fn(grid=grid, block=block, args=args)
        outcome = "halted"
    except ExecutionError as e:
        outcome = "prefix matched" if "did not finish" in str(e) else f"error: {e}"
    except QwenGpuError as e:               # ReplayMismatch and friends
        outcome = f"error: {e}"
    emit({"stage": "stock", "kernel": name, "dtype": dtype, "tokens": len(seen), "outcome": outcome,
          "seconds": round(time.perf_counter() - start, 1),
          "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="qwen3_5_2b_text", help="packaged host config (qwengpu/model/configs)")
    ap.add_argument("--dir", type=Path, default=REPO / "build" / "fixture-2b", help="base/ and merged/ go here")
    ap.add_argument("--model", type=Path, default=None, help="an existing merged checkpoint (skips base and build)")
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--kernels", default=KERNELS, help="comma-separated suite kernels")
    ap.add_argument("--stock-tokens", type=int, default=0, help="also decode this many tokens of dot on the stock path")
    args = ap.parse_args()
    merged = args.model
    if merged is None:
        base, merged = args.dir / "base", args.dir / "merged"
        if not (base / "config.json").is_file():
            make_base(base, args.host)
        if not (merged / "config.json").is_file():
            make_merged(base, merged, args.dtype)
    names = [k for k in args.kernels.split(",") if k]
    if names:                                   # --kernels "": the stock prefix alone
        run_kernels(merged, args.dtype, names)
        gc.collect()
    if args.stock_tokens:
        stock_prefix(merged, args.dtype, args.stock_tokens)


if __name__ == "__main__":
    main()
