"""Decode speed: the stock transformers decode step against FastModel.step, on the same merged
model and the same launch, side by side.

    .venv/bin/python benchmarks/decode_speed.py [--model build/standin-merged] [--dtype bfloat16]
        [--kernel abs_neg] [--stock-tokens 8] [--fast-tokens 0] [--json]

Both paths get the kernel's launch prompt (docs/protocol.md). The fast path then generates
until HALT (or --fast-tokens) and is checked token by token against the interpreter's expected
stream (replay) and the final global memory; the stock path decodes --stock-tokens greedy
tokens (GPU ids only, as the runtime does), which must equal the fast path's first tokens.
Times are wall clock and process CPU time (the CPU is shared: CPU time is the steadier number).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qwengpu import api  # noqa: E402
from qwengpu.launch import Launch  # noqa: E402
from qwengpu.machine import protocol, runtime  # noqa: E402
from qwengpu.machine.fast import FastModel  # noqa: E402


class Clock:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def kernel_launch(name: str):
    """(program, grid, block, params, memory) of a kernel from the suite (kernels/NAME.py + .cu)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "kernels" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    src = (REPO / "kernels" / f"{name}.cu").read_text()
    fn = api.Device("interp").compile(src, f"{name}.cu").get_function(mod.KERNEL)
    grid, block, args = mod.launch()
    launch = Launch.build(fn.program, grid, block, list(args), names=fn.arg_names)
    return fn.program, launch.grid, launch.block, launch.params, launch.memory


def fast_run(model, machine, launch, max_tokens: int) -> dict:
    program, grid, block, params, memory = launch
    expected = protocol.expected_stream(program, grid, block, params, memory)
    ids = [machine.vocab.id(t) for t in protocol.prompt(program, grid, block, params, memory)]
    with Clock() as load:
        fast = FastModel(model)
    state = fast.new_state()
    with Clock() as prefill:
        nxt = fast.prefill(state, ids)
    stream, mismatches = [nxt], 0
    limit = max_tokens or len(expected.tokens)
    with Clock() as decode:
        while len(stream) < limit and machine.vocab.token(stream[-1]).kind not in ("HALT", "FAULT"):
            stream.append(fast.step(state, stream[-1]))
    for i, tok in enumerate(stream):
        mismatches += protocol.check_token(expected, i, machine.vocab.token(tok)) is not None
    halted = machine.vocab.token(stream[-1]).kind == "HALT"
    memory_ok = None
    if halted:
        memory_ok = bool(np.array_equal(machine.read_global(fast.cache(state)), expected.memory))
    steps = len(stream) - 1
    return {"load_s": load.wall, "prompt_tokens": len(ids), "prefill_s": prefill.wall, "prefill_cpu_s": prefill.cpu,
            "decode_tokens": steps, "decode_s": decode.wall, "decode_cpu_s": decode.cpu,
            "tokens_per_s": steps / decode.wall if steps else None,
            "cpu_tokens_per_s": steps / decode.cpu if steps and decode.cpu else None,
            "replay_mismatches": mismatches, "halted": halted, "memory_matches": memory_ok,
            "expected_tokens": len(expected.tokens), "stream": stream}


@torch.no_grad()
def stock_run(model, machine, launch, steps: int) -> dict:
    program, grid, block, params, memory = launch
    ids = [machine.vocab.id(t) for t in protocol.prompt(program, grid, block, params, memory)]
    first = machine.vocab.first_id
    decoder = runtime.StockDecoder(model, first, first + len(machine.vocab))
    with Clock() as prefill:
        stream = [decoder.prefill(ids)]
    with Clock() as decode:
        for _ in range(steps):
            stream.append(decoder.step(stream[-1]))
    return {"prefill_s": prefill.wall, "prefill_cpu_s": prefill.cpu, "decode_tokens": steps,
            "decode_s": decode.wall, "decode_cpu_s": decode.cpu,
            "tokens_per_s": steps / decode.wall if steps else None,
            "cpu_tokens_per_s": steps / decode.cpu if steps and decode.cpu else None, "stream": stream}


def table(r: dict) -> str:
    s, f = r["stock"], r["fast"]
    def num(x, fmt="{:.2f}"):
        return "-" if x is None else fmt.format(x)
    rows = [("decode tokens", s["decode_tokens"], f["decode_tokens"]),
            ("decode tokens/s (wall)", num(s["tokens_per_s"]), num(f["tokens_per_s"])),
            ("decode tokens/s (CPU time)", num(s["cpu_tokens_per_s"]), num(f["cpu_tokens_per_s"])),
            ("prefill s (wall)", num(s["prefill_s"]), num(f["prefill_s"])),
            ("load s", "-", num(f["load_s"]))]
    out = [f"model {r['model']} ({r['dtype']}), kernel {r['kernel']}, prompt {f['prompt_tokens']} tokens",
           f"{'':28s} {'stock':>12s} {'fast':>12s}"]
    out += [f"{name:28s} {str(a):>12s} {str(b):>12s}" for name, a, b in rows]
    speedup = (f["tokens_per_s"] / s["tokens_per_s"]) if s["tokens_per_s"] and f["tokens_per_s"] else None
    out.append(f"speedup (wall) {num(speedup, '{:.0f}x')}; stock stream == fast stream: {r['streams_equal']} "
               f"({s['decode_tokens'] + 1} tokens); fast replay mismatches: {f['replay_mismatches']} over "
               f"{len(f['stream'])} tokens (expected {f['expected_tokens']}); HALT: {f['halted']}; "
               f"global memory matches: {f['memory_matches']}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(REPO / "build" / "standin-merged"))
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--kernel", default="abs_neg")
    ap.add_argument("--stock-tokens", type=int, default=8, help="stock decode steps (slow: ~1 s each)")
    ap.add_argument("--fast-tokens", type=int, default=0, help="fast tokens to generate (0: until HALT)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from qwengpu.machine.build import machine_for
    model, _ = runtime.load_model(args.model, args.dtype)
    machine = machine_for(runtime.host_config(model))
    runtime.bind_vocab(model, machine.vocab)
    launch = kernel_launch(args.kernel)
    fast = fast_run(model, machine, launch, args.fast_tokens)
    stock = stock_run(model, machine, launch, args.stock_tokens)
    result = {"model": args.model, "dtype": args.dtype, "kernel": args.kernel, "threads": torch.get_num_threads(),
              "streams_equal": fast["stream"][:len(stock["stream"])] == stock["stream"], "fast": fast, "stock": stock}
    if args.json:
        for part in (fast, stock):
            part["stream"] = [int(t) for t in part["stream"]]
        print(json.dumps(result, indent=2))
    else:
        print(table(result))
    return 0 if result["streams_equal"] and not fast["replay_mismatches"] else 1


if __name__ == "__main__":
    sys.exit(main())
