"""The whole kernel suite in the stand-in merged model through the batched fast path, with the
replay check: one JSON line per kernel as it finishes, then a summary line (wall time of the
whole run, model load included; generated tokens; aggregate tokens/s).

    .venv/bin/python benchmarks/suite_batched.py [--max-batch 16] [-k PATTERN] [--skip A,B] > results.jsonl

`--steps-only B` instead times FastModel.step_batch alone: one kernel's launch replicated B
times, decode steps per second and aggregate tokens/s (B = 1 is the single-launch path).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qwengpu.api import Device  # noqa: E402
from qwengpu.driver import DEFAULT_BATCH  # noqa: E402
from qwengpu.suite import discover, run_batched  # noqa: E402


def whole_suite(args) -> None:
    start = time.perf_counter()
    device = Device("model", dtype=args.dtype, check="replay", max_tokens=1_000_000)
    device.model_and_machine()
    loaded = time.perf_counter() - start

    def show(r):
        print(json.dumps({"name": r.name, "passed": r.passed, "reason": r.reason[:300], "tokens": r.tokens,
                          "passes": r.passes, "instructions": r.instructions, "seconds": round(r.seconds, 1),
                          "at": round(time.perf_counter() - start, 1)}), flush=True)

    skip = set(args.skip.split(",")) if args.skip else set()
    cases = [c for c in discover(pattern=args.pattern) if c.name not in skip]
    reports = run_batched(cases, device, args.max_batch, on_report=show)
    wall = time.perf_counter() - start
    tokens = sum(r.tokens or 0 for r in reports)
    print(json.dumps({"summary": True, "kernels": len(reports), "passed": sum(r.passed for r in reports),
                      "tokens": tokens, "max_batch": args.max_batch, "wall_s": round(wall, 1),
                      "load_s": round(loaded, 1), "aggregate_tok_s": round(tokens / (wall - loaded), 1)}), flush=True)


def steps_only(args) -> None:
    from qwengpu.driver import protocol, runtime
    from qwengpu.suite import load_spec
    from qwengpu.launch import Launch
    device = Device("model", dtype=args.dtype)
    fast, machine = device.model_and_machine()
    runtime.bind_vocab(fast, machine.vocab)
    case = next(c for c in discover() if c.name == args.kernel)
    spec = load_spec(case)
    grid, block, kargs = spec.launch()
    fn = device.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    lau = Launch.build(fn.program, grid, block, list(kargs))
    ids = [machine.vocab.id(t) for t in protocol.prompt(lau)]      # as the engine feeds it: copy-out too
    for B in args.steps_only:
        state = fast.new_state(B)
        for t in ids[:-1]:
            fast.step_batch(state, [t] * B, decide=[False] * B)
        out = fast.step_batch(state, [ids[-1]] * B)
        begin, steps = time.perf_counter(), 0
        while steps < args.steps and machine.vocab.token(out[0]).kind not in ("HALT", "FAULT"):
            out = fast.step_batch(state, out)
            steps += 1
        dt = time.perf_counter() - begin
        print(json.dumps({"kernel": args.kernel, "batch": B, "steps": steps, "steps_per_s": round(steps / dt, 1),
                          "aggregate_tok_s": round(B * steps / dt, 1)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-batch", type=int, default=DEFAULT_BATCH)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("-k", dest="pattern", default=None)
    ap.add_argument("--skip", default="", help="kernel names to leave out, comma-separated")
    ap.add_argument("--steps-only", type=int, nargs="*", default=None, metavar="B")
    ap.add_argument("--kernel", default="matmul_naive", help="--steps-only: the launch to replicate")
    ap.add_argument("--steps", type=int, default=300, help="--steps-only: decode steps per batch size")
    args = ap.parse_args()
    if args.steps_only:
        steps_only(args)
    else:
        whole_suite(args)


if __name__ == "__main__":
    main()
