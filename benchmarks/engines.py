"""Suite kernels on qwengpu's fast path and on vLLM (the same merged checkpoint), batched.

    .venv/bin/python benchmarks/engines.py                       # the 10 shortest kernels, batch 1,2,4,8
    .venv/bin/python benchmarks/engines.py --kernels dot,zip_guard --batch 1,4 --json
    .venv/bin/python benchmarks/engines.py --engines fast --batch 1,8      # no vLLM needed
    .venv/bin/python benchmarks/engines.py --kernels dot,zip_guard --batch 1 --mixed   # + both in one call

Per kernel: its launch prompt and the fast path's stream (qwengpu.testing.reference.launch_ids,
bf16, the reference), then per engine and batch size B, B copies of the launch at once (the fast
path: runtime.launch_many with max_batch B, in lockstep; vLLM: one generate() call of B prompts,
max_num_seqs the largest B). identical_tokens: every one of the B streams equals the reference
(HALT included). tokens/s: generated tokens of the B launches over the wall time of the call
(prefill included); launches/s: B over the same time. vLLM runs in .venv-vllm
(scripts/install_vllm.sh) and loads once; its load time is reported apart.

Slow on a CPU: vLLM's CPU build runs about 2.5 tokens/s at batch 1 on 2 cores (the fast path
about 1,000). `--out FILE` writes the JSON after every measurement, so a run in the background
can be read while it goes.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# The 10 suite kernels with the shortest streams on the model engine (docs/performance.md,
# "tokens now", at e2267e3): dot 108, zip_guard 330, warp_rotate 336, map_2d 340,
# warp_broadcast 369, vote_activemask 390, early_return 661, vote_any_all 739,
# vote_ballot_popc 894, pool3_shared 912. --shortest N measures them instead.
DEFAULT_KERNELS = ["dot", "zip_guard", "warp_rotate", "map_2d", "warp_broadcast", "vote_activemask",
                   "early_return", "vote_any_all", "vote_ballot_popc", "pool3_shared"]


def shortest_kernels(device, n: int) -> list[str]:
    """The n suite kernels with the fewest generated tokens on the fast path (runs the suite)."""
    from qwengpu import suite
    reports = suite.run_batched(suite.discover(), device, max_batch=8)
    done = sorted((r.tokens, r.name) for r in reports if r.passed and r.tokens)
    return [name for _, name in done[:n]]


def run_fast(device, name: str, ref, batch: int) -> dict:
    from qwengpu.testing.reference import build_launch
    from qwengpu.driver import runtime
    model, machine = device.model_and_machine()
    launches = [build_launch(name, device)[2] for _ in range(batch)]     # with the copy-out, as the reference
    streams = [[] for _ in launches]
    start = time.perf_counter()
    results = runtime.launch_many(model, machine, launches, max_tokens=device.max_tokens, max_batch=batch,
                                  on_token=lambda i, t: streams[i].append(machine.vocab.id(t)))
    seconds = time.perf_counter() - start
    errors = [str(r) for r in results if isinstance(r, Exception)]
    return _row(name, "fast", batch, ref, streams, seconds, errors)


def run_fast_mixed(device, refs: dict) -> dict:
    """Every kernel once, all in one launch_many (max_batch = their number)."""
    from qwengpu.testing.reference import build_launch
    from qwengpu.driver import runtime
    model, machine = device.model_and_machine()
    launches = [build_launch(name, device)[2] for name in refs]         # with the copy-out, as the references
    streams = [[] for _ in launches]
    start = time.perf_counter()
    results = runtime.launch_many(model, machine, launches, max_tokens=device.max_tokens, max_batch=len(launches),
                                  on_token=lambda i, t: streams[i].append(machine.vocab.id(t)))
    seconds = time.perf_counter() - start
    errors = [str(r) for r in results if isinstance(r, Exception)]
    return _mixed_row("fast", refs, streams, seconds, errors)


def run_vllm_mixed(engine, refs: dict) -> dict:
    """Every kernel once, all in one generate() call (vLLM batches sequences of different lengths)."""
    rs = list(refs.values())
    start = time.perf_counter()
    errors = []
    try:
        streams = engine.generate([r.prompt_ids for r in rs], allowed=rs[0].allowed, stop_ids=rs[0].stop_ids,
                                  max_tokens=max(len(r.stream_ids) for r in rs) + 64)
    except Exception as e:  # noqa: BLE001
        streams, errors = [[] for _ in rs], [f"{type(e).__name__}: {e}"]
    return _mixed_row("vllm", refs, streams, time.perf_counter() - start, errors)


def _mixed_row(engine, refs, streams, seconds, errors) -> dict:
    rs = list(refs.values())
    tokens = sum(len(s) for s in streams)
    return {"kernel": "+".join(refs), "engine": engine, "batch": len(rs),
            "prompt_tokens": sum(len(r.prompt_ids) for r in rs), "stream_tokens": sum(len(r.stream_ids) for r in rs),
            "generated_tokens": tokens,
            "identical_tokens": not errors and all(s == r.stream_ids for s, r in zip(streams, rs)),
            "seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 2) if seconds else None,
            "launches_per_s": round(len(rs) / seconds, 4) if seconds else None, "errors": errors}


def run_vllm(engine, name: str, ref, batch: int) -> dict:
    start = time.perf_counter()
    errors = []
    try:
        streams = engine.generate([ref.prompt_ids] * batch, allowed=ref.allowed, stop_ids=ref.stop_ids,
                                  max_tokens=len(ref.stream_ids) + 64)
    except Exception as e:  # noqa: BLE001 - a row that says so, the run goes on
        streams, errors = [[] for _ in range(batch)], [f"{type(e).__name__}: {e}"]
    return _row(name, "vllm", batch, ref, streams, time.perf_counter() - start, errors)


def _row(name, engine, batch, ref, streams, seconds, errors) -> dict:
    tokens = sum(len(s) for s in streams)
    return {"kernel": name, "engine": engine, "batch": batch, "prompt_tokens": len(ref.prompt_ids),
            "stream_tokens": len(ref.stream_ids), "generated_tokens": tokens,
            "identical_tokens": not errors and all(s == ref.stream_ids for s in streams),
            "seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 2) if seconds else None,
            "launches_per_s": round(batch / seconds, 4) if seconds else None, "errors": errors}


def table(rows: list[dict]) -> str:
    cols = ["kernel", "engine", "batch", "prompt_tokens", "stream_tokens", "seconds", "tokens_per_s",
            "launches_per_s", "identical_tokens"]
    head = ["kernel", "engine", "batch", "prompt tokens", "stream tokens", "seconds", "tokens/s", "launches/s",
            "identical tokens"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="merged checkpoint (default: the stand-in merged model)")
    ap.add_argument("--kernels", default=None, help="comma-separated suite kernels (default: the 10 shortest)")
    ap.add_argument("--shortest", type=int, default=None, help="measure and take the N shortest suite kernels")
    ap.add_argument("--batch", default="1,2,4,8", help="batch sizes, comma-separated")
    ap.add_argument("--engines", default="fast,vllm", help="fast, vllm or both")
    ap.add_argument("--python", default=".venv-vllm/bin/python", help="the vLLM venv's python")
    ap.add_argument("--max-model-len", type=int, default=None,
                    help="vLLM's max_model_len (default: the longest prompt + stream + 64)")
    ap.add_argument("--mixed", action="store_true",
                    help="also run all the kernels together, once each, in one call per engine "
                         "(batch = the number of kernels; the fast path's max_batch likewise)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--out", default=None, help="write the JSON here after every measurement")
    args = ap.parse_args(argv)

    from qwengpu.testing.reference import launch_ids, model_device
    if args.model is None:
        from qwengpu.model.merge import default_merged_model
        args.model = str(default_merged_model())
    model_dir = Path(args.model).resolve()
    batches = [int(b) for b in args.batch.split(",") if b]
    engines = [e for e in args.engines.split(",") if e]
    device = model_device(model_dir, "bfloat16")
    if args.kernels:
        names = [k for k in args.kernels.split(",") if k]
    elif args.shortest:
        names = shortest_kernels(device, args.shortest)
    else:
        names = DEFAULT_KERNELS
    say = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    result = {"model": str(model_dir), "kernels": names, "batches": batches, "engines": engines, "rows": []}

    def save() -> None:
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=1))

    refs = {}
    for name in names:
        refs[name] = launch_ids(name, model_dir, device=device)
        say(f"reference {name}: {len(refs[name].prompt_ids)} prompt tokens, {len(refs[name].stream_ids)} generated "
            f"({refs[name].seconds:.2f} s on the fast path)")
    if "fast" in engines:
        for name in names:
            for b in batches:
                result["rows"].append(run_fast(device, name, refs[name], b))
                say(json.dumps(result["rows"][-1]))
                save()
        if args.mixed:
            result["rows"].append(run_fast_mixed(device, refs))
            say(json.dumps(result["rows"][-1]))
            save()
    if "vllm" in engines:
        from qwengpu.engines.vllm import VllmEngine
        longest = max(len(r.prompt_ids) + len(r.stream_ids) for r in refs.values()) + 64
        eng = VllmEngine(model_dir, python=args.python, max_batch=max(batches + ([len(names)] if args.mixed else [])),
                         max_model_len=args.max_model_len or max(longest, 512))
        start = time.perf_counter()
        eng.start()
        result["vllm"] = {**eng.info, "start_seconds": round(time.perf_counter() - start, 2),
                          "max_batch": eng.max_batch, "max_model_len": eng.max_model_len}
        say(f"vLLM loaded: {result['vllm']}")
        save()
        try:
            for name in names:
                for b in batches:
                    result["rows"].append(run_vllm(eng, name, refs[name], b))
                    say(json.dumps(result["rows"][-1]))
                    save()
            if args.mixed:
                result["rows"].append(run_vllm_mixed(eng, refs))
                say(json.dumps(result["rows"][-1]))
                save()
        finally:
            eng.close()
    result["identical_tokens"] = all(r["identical_tokens"] for r in result["rows"])
    save()
    print(json.dumps(result, indent=1) if args.json else table(result["rows"]))
    return 0 if result["identical_tokens"] else 1


if __name__ == "__main__":
    sys.exit(main())
