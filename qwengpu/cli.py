"""The `qgpu` command.

    qgpu run FILE.cu --kernel NAME --grid 2 --block 4,2 --arg 'i32:[1,2,3]' --arg 'u32:zeros(8)' --arg 5
    qgpu run FILE.cu --engine model [--check replay] [--show-tokens] [--max-tokens N] [--model DIR] [--dtype D] [--stock]
    qgpu suite [--engine interp|model] [--check replay] [--batch N] [--frontend clang|nvrtc] [-k PATTERN] [--json]
    qgpu bench [--json] [--kernels a,b] [--stock-tokens K] [--dtype float32|bfloat16] [--model DIR] [--fast-step c|torch]
    qgpu demo

Argument syntax (--arg, once per kernel parameter, in order):
    5, -3, 0x1f        a 32-bit scalar (signed or unsigned range)
    i32:[1,2,3]        an int32 array; u32:[...] for uint32; [1,2,3] means i32
    i32:zeros(8)       eight zeros; u32:range(8) is 0..7; i32:full(8,-1) is eight -1s
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import List, Optional

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from qwengpu.api import DEFAULT_MAX_TOKENS, ENGINES, MODEL_DTYPES, Device
from qwengpu.errors import QwenGpuError
from qwengpu.machine import DEFAULT_BATCH
from qwengpu.toolchain.frontend import FRONTENDS

app = typer.Typer(help="qwengpu: run CUDA kernels on a 4-lane SIMT GPU.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

DTYPES = {"i32": np.int32, "u32": np.uint32}
DEVICE_HELP = "model engine: cpu, cuda, cuda:N or mps (default: the best available; the fast path runs on the CPU)"


class ArgSyntaxError(QwenGpuError):
    """A --arg, --grid or --block value the CLI cannot read."""


def parse_arg(text: str):
    """One --arg value -> np.ndarray or int (syntax in the module docstring)."""
    t = text.strip()
    dtype_name, sep, body = t.partition(":")
    if sep and dtype_name in DTYPES:
        dtype = DTYPES[dtype_name]
    elif sep:
        raise ArgSyntaxError(f"--arg {text!r}: unknown type {dtype_name!r}; use i32 or u32")
    else:
        dtype, body = None, t
    body = body.replace(" ", "")
    try:
        if body.startswith("["):
            if not body.endswith("]"):
                raise ValueError("missing ]")
            values = [int(v, 0) for v in body[1:-1].split(",") if v]
            return _array(values, dtype or np.int32, text)
        call = re.fullmatch(r"(zeros|range|full)\(([^)]*)\)", body)
        if call:
            nums = [int(v, 0) for v in call[2].split(",") if v]
            values = {"zeros": lambda n: [0] * n, "range": lambda n: list(range(n)),
                      "full": lambda n, v: [v] * n}[call[1]](*nums)
            return _array(values, dtype or np.int32, text)
        value = int(body, 0)
    except (ValueError, TypeError) as e:
        raise ArgSyntaxError(f"--arg {text!r} is not a scalar (5, 0x1f), an array (i32:[1,2,3], u32:zeros(8), "
                             f"i32:range(4), i32:full(4,-1)) ({e})") from None
    if dtype is None:
        return value                     # range-checked by the launch
    return _array([value], dtype, text)[0]


def _array(values: list[int], dtype, text: str) -> np.ndarray:
    info = np.iinfo(dtype)
    bad = [v for v in values if not info.min <= v <= info.max]
    if bad:
        raise ArgSyntaxError(f"--arg {text!r}: {bad[0]} does not fit in {np.dtype(dtype).name}")
    return np.array(values, dtype=dtype)


def parse_dims(name: str, text: str) -> tuple[int, ...]:
    """'2' or '4,2' or '2x2x1' -> a tuple of 1-3 ints."""
    parts = re.split(r"[,x]", text.strip())
    if not 1 <= len(parts) <= 3 or not all(p.strip().isdigit() for p in parts):
        raise ArgSyntaxError(f"--{name} {text!r}: give 1 to 3 positive integers, e.g. 4 or 4,2")
    return tuple(int(p) for p in parts)


def fail(e: Exception) -> None:
    """One red line (extra compiler diagnostics follow, dimmed) and exit code 1."""
    first, *rest = str(e).splitlines() or [type(e).__name__]
    err_console.print(f"[bold red]error:[/] [red]{_escape(first)}[/]")
    for line in rest:
        err_console.print(f"[dim]{_escape(line)}[/]")
    raise typer.Exit(1)


def _escape(s: str) -> str:
    from rich.markup import escape
    return escape(s)


def _choice(name: str, value: str, choices) -> str:
    if value not in choices:
        raise ArgSyntaxError(f"--{name} {value!r}: choose one of {', '.join(choices)}")
    return value


@app.command()
def run(file: Path = typer.Argument(..., help="CUDA source file (.cu)"),
        kernel: Optional[str] = typer.Option(None, "--kernel", "-k",
                                             help="the __global__ function to launch (default: the only one)"),
        grid: str = typer.Option("1", help="grid size: 2 or 2,2 or 2,1,1"),
        block: str = typer.Option("4", help="block size: 4 or 4,2"),
        arg: Optional[List[str]] = typer.Option(None, "--arg", "-a",
                                                help="kernel argument, once per parameter: 5, i32:[1,2], u32:zeros(8)"),
        engine: str = typer.Option("interp", help=f"engine: {', '.join(ENGINES)}"),
        frontend: str = typer.Option("clang", help=f"front end: {', '.join(FRONTENDS)}"),
        opt: int = typer.Option(2, "-O", help="clang optimisation level 0..3"),
        show_ptx: bool = typer.Option(False, "--show-ptx", help="print the PTX"),
        show_isa: bool = typer.Option(False, "--show-isa", help="print the lowered machine program"),
        trace: bool = typer.Option(False, "--trace", help="print every pass (interp engine)"),
        model: Optional[Path] = typer.Option(None, "--model", help="merged checkpoint (model engine; default: the stand-in)"),
        dtype: str = typer.Option("float32", "--dtype", help=f"model engine: {', '.join(MODEL_DTYPES)}"),
        check: str = typer.Option("none", "--check", help="model engine: none, or replay (every token against the interpreter)"),
        show_tokens: bool = typer.Option(False, "--show-tokens", help="model engine: print each token as it is generated"),
        max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS, "--max-tokens", help="model engine: generation limit"),
        stock: bool = typer.Option(False, "--stock", help="model engine: the stock transformers forward, not the fast path"),
        device: Optional[str] = typer.Option(None, "--device", help=DEVICE_HELP)):
    """Compile FILE, launch KERNEL once and print the final arrays.

    --arg, once per kernel parameter: a scalar (5, -3, 0x1f, u32:7) or an array
    (i32:[1,2,3], u32:[1,2], i32:zeros(8), u32:range(8), i32:full(8,-1)).
    """
    try:
        if not file.is_file():
            raise QwenGpuError(f"{file}: no such file")
        args = [parse_arg(a) for a in arg or []]
        on_token = (lambda token: console.print(str(token), markup=False)) if show_tokens else None
        dev = _device(engine, frontend, opt, model, dtype, check, max_tokens, stock, on_token, device)
        module = dev.compile(file.read_text(), filename=file.name)
        if show_ptx:
            console.print(module.ptx, markup=False)
        fn = module.get_function(kernel or _only_kernel(module))
        if show_isa:
            console.print(fn.program.listing(), markup=False)
        result = fn(grid=parse_dims("grid", grid), block=parse_dims("block", block), args=args, trace=trace)
    except QwenGpuError as e:
        fail(e)
    for i, step in enumerate(result.trace or []):
        console.print(str(step) if result.engine == "model" else _step_line(i, step), markup=False)
    for name, value in zip(fn.arg_names, args):
        if isinstance(value, np.ndarray):
            console.print(f"{name} = {value.tolist()}", markup=False)
    console.print(f"[dim]{_stats(result)}[/]")


def _device(engine, frontend, opt, model, dtype, check, max_tokens, stock, on_token=None, device=None) -> Device:
    if engine == "model":
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()        # no loading bars or fallback notes between the tokens
        hf_logging.disable_progress_bar()
    return Device(_choice("engine", engine, ENGINES), _choice("frontend", frontend, FRONTENDS), opt,
                  model=model, dtype=_choice("dtype", dtype, MODEL_DTYPES),
                  check=None if _choice("check", check, ("none", "replay")) == "none" else check,
                  max_tokens=max_tokens, on_token=on_token, fast=not stock, device=device)


def _only_kernel(module) -> str:
    names = module.kernel_names
    if len(names) != 1:
        raise QwenGpuError(f"{module.filename} has {len(names)} kernels ({', '.join(names) or 'none'}); "
                           f"choose one with --kernel")
    return names[0]


def _step_line(i: int, step) -> str:
    """One pass of the trace: where, which lanes, what it wrote."""
    regs = " ".join(f"l{lane}.r{reg}={value:#x}" for lane, reg, value in step.reg_writes)
    mem = " ".join(f"{space.value}[{word}]={value:#x}" for space, word, value in step.mem_writes)
    return f"pass {i}: block {step.block_id} warp {step.warp} B{step.pc} mask {step.mask:#06b}  {regs} {mem}".rstrip()


def _stats(result) -> str:
    parts = [f"engine {result.engine}"]
    if result.passes is not None:
        parts.append(f"{result.passes} passes, {result.instructions} instructions")
    if result.tokens is not None:
        parts.append(f"{result.tokens} tokens")
    parts.append(f"{result.seconds:.3f} s")
    return ", ".join(parts)


@app.command()
def suite(engine: str = typer.Option("interp", help=f"engine: {', '.join(ENGINES)}"),
          frontend: str = typer.Option("clang", help=f"front end: {', '.join(FRONTENDS)}"),
          pattern: Optional[str] = typer.Option(None, "-k", help="only kernels whose name contains this (or matches this glob)"),
          as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
          directory: Optional[Path] = typer.Option(None, "--dir", help="kernel directory (default: ./kernels)"),
          opt: int = typer.Option(2, "-O", help="clang optimisation level 0..3"),
          model: Optional[Path] = typer.Option(None, "--model", help="merged checkpoint (model engine; default: the stand-in)"),
          dtype: str = typer.Option("float32", "--dtype", help=f"model engine: {', '.join(MODEL_DTYPES)}"),
          check: str = typer.Option("none", "--check", help="model engine: none, or replay (every token against the interpreter)"),
          max_tokens: int = typer.Option(DEFAULT_MAX_TOKENS, "--max-tokens", help="model engine: generation limit per launch"),
          stock: bool = typer.Option(False, "--stock", help="model engine: the stock transformers forward, not the fast path"),
          batch: int = typer.Option(DEFAULT_BATCH, "--batch", help="model engine, fast path: launches decoded together (1: one at a time)"),
          device: Optional[str] = typer.Option(None, "--device", help=DEVICE_HELP)):
    """Run the kernel suite; exit code 1 if any kernel fails."""
    from qwengpu.suite import DEFAULT_DIR, run_suite
    if directory is None:
        directory = Path("kernels") if Path("kernels").is_dir() else DEFAULT_DIR
    try:
        if batch < 1:
            raise QwenGpuError(f"--batch must be at least 1, got {batch}")
        dev = _device(engine, frontend, opt, model, dtype, check, max_tokens, stock, device=device)
        summary = run_suite(pattern=pattern, directory=directory, max_batch=None if stock or batch == 1 else batch,
                            device=dev)
    except QwenGpuError as e:
        fail(e)
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        console.print(_suite_table(summary))
    if summary["failed"] or not summary["kernels"]:
        raise typer.Exit(1)


def _suite_table(summary: dict) -> Table:
    table = Table(title=f"kernel suite on {summary['engine']} ({summary['frontend']}): "
                        f"{summary['passed']} passed, {summary['failed']} failed")
    for col, justify in (("kernel", "left"), ("status", "left"), ("passes", "right"),
                         ("instructions", "right"), ("seconds", "right"), ("detail", "left")):
        table.add_column(col, justify=justify, overflow="fold")
    for k in summary["kernels"]:
        status = "[green]passed[/]" if k["passed"] else "[red]failed[/]"
        table.add_row(k["name"], status, _num(k["passes"]), _num(k["instructions"]),
                      f"{k['seconds']:.2f}", _escape(k["reason"]))
    return table


def _num(v) -> str:
    return "-" if v is None else str(v)


@app.command()
def bench(as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
          kernels: Optional[str] = typer.Option(None, "--kernels", help="comma-separated suite kernels "
                                                "(default: dot,nested_divergence,pool3_shared,atomic_inc,warp_rotate)"),
          stock_tokens: int = typer.Option(8, "--stock-tokens", help="tokens the stock path decodes per launch (slow)"),
          dtype: str = typer.Option("float32", "--dtype", help=f"{', '.join(MODEL_DTYPES)}"),
          model: Optional[Path] = typer.Option(None, "--model", help="merged checkpoint (default: the stand-in)"),
          step: str = typer.Option("c", "--fast-step", help="the fast path's step: c (native.c) or torch (its torch ops)")):
    """The exact fast path against the stock transformers forward on a few suite kernels, side
    by side; exit code 1 unless every token matches (stock vs fast, fast vs the interpreter)."""
    from rich.progress import Progress

    from qwengpu.bench import STEPS, check_options, parse_kernels, run_bench
    names = parse_kernels(kernels)
    try:
        _choice("dtype", dtype, MODEL_DTYPES)
        _choice("fast-step", step, STEPS)
        check_options(names, stock_tokens)
        _device("model", "clang", 2, None, dtype, "none", 1, False)     # quiets transformers' logging
        with Progress(console=err_console, transient=True) as bar:
            task = bar.add_task("loading the model", total=None)

            def show(kernel, done, total):
                bar.update(task, description=f"{kernel}: stock path, token {done} of {total}",
                           completed=done, total=total)
            summary = run_bench(names, stock_tokens, dtype, model, step, progress=show)
    except QwenGpuError as e:
        fail(e)
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        wide = Console(highlight=False, width=max(console.width, 120))     # 12 columns: wider than 80 when piped
        wide.print(_bench_table(summary))
        for r in summary["kernels"]:
            if r["error"]:
                err_console.print(f"[red]{r['kernel']}: {_escape(r['error'])}[/]")
    if not (summary["identical_tokens"] and summary["replay_exact"]):
        raise typer.Exit(1)


def _bench_table(s: dict) -> Table:
    """Per kernel and medians; 'same' = stock tokens equal the fast path's, 'replay' = the fast
    stream and memory equal the interpreter's."""
    def rate(v):
        return "-" if v is None else f"{v:,.2f}"

    def ok(flag):
        return "[green]yes[/]" if flag else "[red]no[/]"
    table = Table(title=f"qgpu bench: {s['model']} ({s['dtype']}); stock path: first {s['stock_tokens']} tokens",
                  caption=f"speedup = {s['speedup_basis']}; tok/s over the decode steps (prefill apart); "
                          f"interp ms summed")
    for col in ("kernel", "tokens", "passes", "instrs", "fast s", "fast tok/s", "stock prefill s",
                "stock tok/s", "speedup", "same", "replay", "interp ms"):
        table.add_column(col, justify="left" if col == "kernel" else "right", no_wrap=col == "kernel")
    for r in s["kernels"]:
        table.add_row(r["kernel"], f"{r['tokens']:,}", f"{r['passes']:,}", f"{r['instructions']:,}",
                      f"{r['fast_s']:.1f}", rate(r["fast_tok_s"]), f"{r['stock_prefill_s']:.1f}",
                      rate(r["stock_tok_s"]), "-" if r["speedup"] is None else f"{r['speedup']:.0f}x",
                      ok(r["identical_tokens"]), ok(r["replay_exact"]), f"{r['interp_s'] * 1e3:.1f}")
    speedup = "-" if s["speedup_vs_stock"] is None else f"{s['speedup_vs_stock']:.0f}x"
    table.add_section()
    table.add_row("median", "", "", "", "", rate(s["fast_tok_s"]), "", rate(s["stock_tok_s"]), speedup,
                  ok(s["identical_tokens"]), ok(s["replay_exact"]), f"{s['interp_seconds'] * 1e3:.1f}")
    return table


@app.command("check-circuit")
def check_circuit(cases: int = typer.Option(10_000, "--cases", help="random cases per arithmetic gadget and dtype"),
                  as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table")):
    """Run every circuit gadget and memory bank through the stock Qwen3.5 layers in fp32 and
    bf16; exit code 1 on any mismatch or if the circuit is not silent on text."""
    from rich.progress import Progress
    from transformers.utils import logging as hf_logging

    from qwengpu.circuit.check import check_circuit as run_checks, passed
    hf_logging.set_verbosity_error()   # the pure-PyTorch GDN kernels are the ones we check: no fallback notes
    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("checking", total=None)
        report = run_checks(cases, progress=lambda name: bar.update(task, description=f"checking {name}"))
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        table = Table(title=f"circuit check ({cases} cases per gadget and dtype)")
        for col in ("gadget", "cases", "mismatches", "layers", "neurons"):
            table.add_column(col, justify="left" if col == "gadget" else "right")
        for name, r in report["gadgets"].items():
            bad = "[red]" if r["mismatches"] else ""
            table.add_row(name, str(r["cases"]), f"{bad}{r['mismatches']}", str(r["layers"]), str(r["neurons"]))
        console.print(table)
        console.print(f"silent on text: {report['silent_on_text']}")
    if not passed(report):
        raise typer.Exit(1)


@app.command()
def build(base: str = typer.Option(..., "--base", help='a local Qwen3.5 checkpoint directory, or "standin"'),
          out: Path = typer.Option(..., "--out", help="directory for the merged checkpoint"),
          dtype: str = typer.Option("bfloat16", "--dtype", help="bfloat16 or float32"),
          force: bool = typer.Option(False, "--force", help="overwrite a non-empty --out"),
          rescale: str = typer.Option("residual", "--rescale",
                                      help="residual (exact, default) or eps (the norm/eps recipe); see docs/build.md")):
    """Build a merged Qwen3_5ForCausalLM checkpoint: circuit layers in front of the base's layers."""
    from qwengpu.model.merge import build as build_checkpoint
    try:
        path = build_checkpoint(base, out, dtype=dtype, force=force, rescale=rescale)
    except QwenGpuError as e:
        fail(e)
    console.print(f"merged checkpoint written to [bold]{_escape(str(path))}[/]")


eval_app = typer.Typer(help="Measure the merged model.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("kl")
def eval_kl(base: str = typer.Option(..., "--base", help='the base checkpoint directory, or "standin"'),
            merged: Optional[Path] = typer.Option(None, "--merged", help="merged checkpoint (default: build one in fp32)"),
            as_json: bool = typer.Option(False, "--json", help="print JSON")):
    """KL(base || merged) on built-in multilingual text, fp32 and bf16, and the circuit's
    largest output on text positions."""
    from transformers.utils import logging as hf_logging

    from qwengpu.model.kl import eval_kl as measure
    hf_logging.set_verbosity_error()
    try:
        report = measure(base, merged)
    except QwenGpuError as e:
        fail(e)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            console.print(f"{key:<28} {value}")


@app.command()
def demo(engine: str = typer.Option("model", help=f"engine: {', '.join(ENGINES)}"),
         stock: bool = typer.Option(False, "--stock", help="model engine: the stock transformers forward "
                                    "instead of the exact fast path (slow on a CPU)"),
         device: Optional[str] = typer.Option(None, "--device", help=DEVICE_HELP)):
    """dot([1,2,3], [4,5,6]) run by the model itself (the stand-in merged model, built on first use)."""
    a, b = np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32)
    out = np.zeros(1, np.int32)
    tokens = []

    def show(token):                       # the launch as the model writes it, token by token
        tokens.append(str(token))
        console.print(str(token), end="  ", markup=False, soft_wrap=True)

    try:
        from qwengpu.suite import DEFAULT_DIR
        source = DEFAULT_DIR / "dot.cu"
        dev = _device(_choice("engine", engine, ENGINES), "clang", 2, None, "float32", "replay" if engine == "model"
                      else "none", DEFAULT_MAX_TOKENS, stock, show if engine == "model" else None, device)
        fn = dev.compile(source.read_text(), filename=str(source)).get_function("dot")
        result = fn(grid=1, block=4, args=[a, b, out, 3])
    except QwenGpuError as e:
        fail(e)
    if tokens:
        console.print()
    console.print(f"dot([1,2,3], [4,5,6]) = [bold]{int(out[0])}[/]")
    console.print(f"[dim]{_stats(result)}[/]")


if __name__ == "__main__":
    app()
