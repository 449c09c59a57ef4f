"""Suite kernels on llama.cpp (a GGUF of the merged checkpoint) against qwengpu's fast path.

    .venv/bin/python benchmarks/engine_llamacpp.py                      # the 10 shortest kernels
    .venv/bin/python benchmarks/engine_llamacpp.py --kernels dot,zip_guard --gguf FILE --model DIR
    nice -n 10 .venv/bin/python benchmarks/engine_llamacpp.py --out build/engines/llamacpp-suite.json &

Per kernel: its launch prompt and the fast path's stream (qwengpu.testing.reference.launch_ids on
--model, the checkpoint the GGUF was exported from), then the same prompt on llama.cpp
(qwengpu.engines.llamacpp.LlamaCppEngine, greedy over the GPU ids, stopping at HALT or FAULT).
identical: llama.cpp's stream equals the fast path's, token for token, HALT included.
prefill tokens/s: prompt tokens over llama.cpp's prompt decode; decode tokens/s: generated
tokens over the generation. The engine loads once. `--out FILE` rewrites the JSON after every
kernel, so a run in the background can be read while it goes. Exit 1 if any stream differs.

Slow on a CPU: about 0.25-2 generated tokens/s on 2 cores (the fast path: about 1,000).
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
# vote_ballot_popc 894, pool3_shared 912.
DEFAULT_KERNELS = ["dot", "zip_guard", "warp_rotate", "map_2d", "warp_broadcast", "vote_activemask",
                   "early_return", "vote_any_all", "vote_ballot_popc", "pool3_shared"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", default=str(REPO / "build/engines/standin-bf16.gguf"))
    ap.add_argument("--model", default=str(REPO / "build/engines/standin-merged"),
                    help="the checkpoint the GGUF was exported from (the fast path's reference)")
    ap.add_argument("--kernels", default=",".join(DEFAULT_KERNELS))
    ap.add_argument("--python", default=".venv-llamacpp/bin/python")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", default=None, help="write the JSON here after every kernel")
    ap.add_argument("--json", action="store_true", help="print the JSON at the end")
    a = ap.parse_args(argv)

    from qwengpu.engines.llamacpp import LlamaCppEngine
    from qwengpu.testing.reference import first_difference, launch_ids

    kernels = [k for k in a.kernels.split(",") if k]
    report = {"gguf": a.gguf, "model": a.model, "kernels": [], "started": time.strftime("%Y-%m-%d %H:%M:%S")}

    def save():
        if a.out:
            Path(a.out).write_text(json.dumps(report, indent=2))

    eng = LlamaCppEngine(a.gguf, python=a.python, threads=a.threads)
    report["load_seconds"] = round(eng.load_seconds, 1)
    print(f"llama.cpp loaded {a.gguf} in {eng.load_seconds:.1f} s", file=sys.stderr, flush=True)
    ok = True
    try:
        for name in kernels:
            ref = launch_ids(name, a.model)
            count = [0]
            t0 = time.perf_counter()

            def tick(_i, _tok):
                count[0] += 1
                if count[0] % 50 == 0:
                    el = time.perf_counter() - t0
                    print(f"  {name}: {count[0]}/{len(ref.stream_ids)} tokens, {el:.0f} s", file=sys.stderr, flush=True)

            got = eng.generate([ref.prompt_ids], allowed=ref.allowed, stop_ids=ref.stop_ids,
                               max_tokens=len(ref.stream_ids) + 64, on_token=tick)[0]
            st = eng.last_stats[0]
            diff = first_difference(ref.stream_ids, got)
            row = {"kernel": name, "prompt_tokens": len(ref.prompt_ids), "tokens": len(got),
                   "fast_path_tokens": len(ref.stream_ids), "identical": diff is None, "first_difference": diff,
                   "prefill_seconds": round(st["prefill_seconds"], 2), "decode_seconds": round(st["decode_seconds"], 2),
                   "prefill_tokens_per_s": round(len(ref.prompt_ids) / st["prefill_seconds"], 2),
                   "decode_tokens_per_s": round(len(got) / st["decode_seconds"], 3),
                   "fast_path_seconds": round(ref.seconds, 2)}
            ok &= diff is None
            report["kernels"].append(row)
            save()
            print(f"{name:18s} prompt {row['prompt_tokens']:5d}  tokens {row['tokens']:5d}  "
                  f"identical {'yes' if diff is None else f'NO (first difference at {diff})'}  "
                  f"prefill {row['prefill_tokens_per_s']} tok/s  decode {row['decode_tokens_per_s']} tok/s", flush=True)
    finally:
        eng.close()
        report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        report["identical"] = sum(r["identical"] for r in report["kernels"])
        report["measured"] = len(report["kernels"])
        save()
    if a.json:
        print(json.dumps(report, indent=2))
    print(f"{report['identical']}/{report['measured']} kernels identical", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
