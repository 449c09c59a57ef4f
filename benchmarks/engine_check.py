"""Suite kernels on an engine that returns only tokens (vLLM or llama.cpp) against qwengpu's exact
fast path of the same checkpoint: the token streams must be identical, and the results decoded
from the copy-out alone must equal the kernels' NumPy references (replay checks every token too).

    .venv/bin/python benchmarks/engine_check.py --engine vllm [--model DIR] [--shortest 10 | --kernels a,b] [--json]
    .venv/bin/python benchmarks/engine_check.py --engine llama.cpp --gguf FILE.gguf [--model DIR] ...

--model is the merged checkpoint (default: the stand-in); for llama.cpp, the one the GGUF was
exported from. On vLLM all launches go in one request (it batches them, up to its max_batch of
8); llama.cpp runs one request per launch, and --out FILE is rewritten after each. The engines
are slow on a CPU (docs/performance.md, "Other engines").
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

from qwengpu.api import Device
from qwengpu.driver import protocol, runtime
from qwengpu.suite import discover, load_spec, mismatches


def prepared(case):
    """(spec's args, expected, names, fast Launch, engine Launch) of one suite kernel."""
    spec = load_spec(case)
    grid, block, args = spec.launch()
    args = list(args)
    fn = Device("model").compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    expected = spec.reference(*copy.deepcopy(args))
    engine_args = copy.deepcopy(args)
    return (engine_args, expected, fn.arg_names, fn.launch(grid, block, copy.deepcopy(args)),
            fn.launch(grid, block, engine_args))


def shortest(n: int) -> list:
    """The n suite kernels with the shortest streams (prompt + generated, on the reference)."""
    def length(case):
        _, _, _, L, _ = prepared(case)
        return len(protocol.prompt(L)) + len(protocol.expected_stream(L).tokens)      # copy-out: output_words()
    return sorted(discover(), key=length)[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=("vllm", "llama.cpp"), required=True)
    ap.add_argument("--model", type=Path, help="the merged checkpoint (default: the stand-in)")
    ap.add_argument("--gguf", type=Path, help="llama.cpp: the GGUF exported from --model")
    ap.add_argument("--kernels", help="comma-separated suite kernels")
    ap.add_argument("--shortest", type=int, default=10, help="else the N kernels with the shortest streams")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path, help="write the JSON summary here after every request")
    a = ap.parse_args()
    from qwengpu.engines.connect import open_engine
    from qwengpu.fast import FastModel
    from qwengpu.model.merge import default_merged_model
    model = a.model or default_merged_model()
    if a.engine == "llama.cpp" and a.gguf is None:
        ap.error("--engine llama.cpp needs --gguf FILE (qgpu export gguf --model DIR --out FILE)")
    cases = ([c for c in discover() if c.name in a.kernels.split(",")] if a.kernels else shortest(a.shortest))
    kernels = [prepared(c) for c in cases]
    fast = FastModel.from_checkpoint(model, "float32")
    machine = runtime.readout_of(model)
    start = time.perf_counter()
    reference = runtime.launch_many(fast, machine, [k[3] for k in kernels], max_tokens=200_000, check="replay")
    fast_s = time.perf_counter() - start
    print(f"fast path: {len(kernels)} launches in {fast_s:.1f} s; starting {a.engine}", file=sys.stderr, flush=True)
    engine, vocab = open_engine(a.engine, a.gguf if a.engine == "llama.cpp" else model)
    requests = [list(range(len(kernels)))] if a.engine == "vllm" else [[i] for i in range(len(kernels))]
    rows, engine_s = [], 0.0
    for request in requests:
        start = time.perf_counter()
        runs = runtime.launch_on_engine(engine, vocab, [kernels[i][4] for i in request], max_tokens=200_000,
                                        check="replay")
        engine_s += time.perf_counter() - start
        rows += [row(cases[i], kernels[i], reference[i], run) for i, run in zip(request, runs)]
        summary = summarize(a, model, rows, engine_s, fast_s)
        if a.out:
            a.out.write_text(json.dumps(summary, indent=1))
    if a.json:
        print(json.dumps(summary, indent=1))
    else:
        for r in rows:
            print(f"{r['kernel']:22} {r['tokens'] or 0:6} tokens  identical {r.get('identical_tokens')}  "
                  f"results exact {r.get('results_exact')}  {r.get('error', r.get('why', ''))}")
        print(f"{a.engine}: {summary['generated']:,} tokens in {engine_s:.0f} s ({summary['engine_tokens_per_s']} "
              f"tokens/s); fast path {fast_s:.1f} s; identical {summary['all_identical']}, exact {summary['all_exact']}")
    return 0 if summary["all_identical"] and summary["all_exact"] else 1


def row(case, kernel, ref, run) -> dict:
    """One kernel's outcome: identical streams, and the copy-out's results against NumPy."""
    args, expected, names, _, launch = kernel
    out = {"kernel": case.name, "tokens": getattr(ref, "tokens", None)}
    if isinstance(run, Exception) or isinstance(ref, Exception):
        return out | {"error": f"{type(run).__name__}: {run}" if isinstance(run, Exception) else f"fast path: {ref}"}
    launch.copy_back()
    bad = mismatches(args, expected, names)
    return out | {"identical_tokens": run.stream == ref.stream, "results_exact": not bad,
                  "copied_words": len(run.copied), "why": "; ".join(bad)}


def summarize(a, model, rows, engine_s: float, fast_s: float) -> dict:
    generated = sum(r["tokens"] or 0 for r in rows)
    return {"engine": a.engine, "model": str(model), "gguf": str(a.gguf) if a.gguf else None,
            "kernels": rows, "generated": generated, "engine_seconds": round(engine_s, 1),
            "fast_seconds": round(fast_s, 1), "engine_tokens_per_s": round(generated / engine_s, 2),
            "all_identical": all(r.get("identical_tokens") for r in rows),
            "all_exact": all(r.get("results_exact") for r in rows)}


if __name__ == "__main__":
    sys.exit(main())
