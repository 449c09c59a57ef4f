"""The `qgpu` command.

    qgpu run FILE.cu --kernel NAME --grid 2 --block 4,2 --arg 'i32:[1,2,3]' --arg 'u32:zeros(8)' --arg 5 [--arg 'f32:[1.5,2]' --arg 1.5f]
    qgpu run FILE.cu --engine model [--check replay] [--show-tokens] [--max-tokens N] [--model DIR] [--dtype D] [--stock]
    qgpu run FILE.cu --engine vllm [--model DIR | --url URL] | --engine llama.cpp --model FILE.gguf [--check replay]
    qgpu suite [--engine interp|model|vllm|llama.cpp] [--check replay] [--batch N] [--frontend clang|nvrtc] [-k PATTERN] [--json]
    qgpu bench [--json] [--kernels a,b] [--stock-tokens K] [--dtype float32|bfloat16] [--model DIR] [--fast-step c|torch] [--max-tokens N] [--max-passes N]
    qgpu demo [--engine model|interp] [--max-tokens N] [--max-passes N (interp)]
    qgpu chat --model DIR [--mode normal|advanced] [--once QUESTION] [--json] [--max-tokens N] [--launch-max-tokens N]
    qgpu eval chat --model DIR [--json] [--max-tokens N] [--launch-max-tokens N]
    qgpu export gguf --model DIR --out FILE [--type f32|bf16|f16]

Counts: "blocks" are machine blocks executed (one per warp scheduling turn) and "instructions"
warp-instructions, the same on every engine; on the model engine "tokens" are the generated
tokens, one forward pass of the model each.

Limits: --max-passes (default 200,000 machine blocks) stops the interpreter in about 2 s
on an infinite loop; --max-tokens (model engine; default 20,000, suite 200,000) stops the model
in about 22 s in all (both on an otherwise idle 2-core machine, 2026-12-05).

Argument syntax: --arg once per kernel parameter, in order (qwengpu/args.py).
"""
from __future__ import annotations

import json
import re
import sys
import time
import warnings
from pathlib import Path
from typing import List, Optional

import numpy as np
import typer
from typer._click import exceptions as click_errors      # typer's own copy of click
from typer.core import TyperArgument, TyperGroup
from rich.console import Console
from rich.table import Table

from qwengpu.api import DEFAULT_MAX_PASSES, DEFAULT_MAX_TOKENS, ENGINES, Device
from qwengpu.args import ArgSyntaxError, parse_arg, parse_dims
from qwengpu.dtypes import DTYPES, SHORT
from qwengpu.errors import QwenGpuError, QwenGpuWarning, plural
from qwengpu.driver import DEFAULT_BATCH
from qwengpu.machine.tokens import runs_pass
from qwengpu.suite import SUITE_MAX_TOKENS
from qwengpu.toolchain.frontend import FRONTENDS

class OneLineErrors(TyperGroup):
    """click's usage errors (a missing argument, an option without its value, a value of the
    wrong type, an unknown option or command) as one red line and exit code 1, like every other
    user mistake, instead of a usage panel and exit code 2. Its commands' --help shows readable
    metavars (_readable_metavars)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _readable_metavars(self)

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        try:
            with warnings.catch_warnings():
                _show_qwengpu_warnings()
                rv = super().main(*args, standalone_mode=False, **kwargs)
        except click_errors.NoArgsIsHelpError as e:
            typer.echo(e.ctx.get_help() if e.ctx else str(e))
            sys.exit(0)
        except click_errors.UsageError as e:
            err_console.print(f"[bold red]error:[/] [red]{_escape(_usage_message(e))}[/]")
            sys.exit(1)
        except click_errors.ClickException as e:
            err_console.print(f"[bold red]error:[/] [red]{_escape(e.format_message())}[/]")
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


def _show_qwengpu_warnings() -> None:
    """Compile-time warnings (QwenGpuWarning: `FILE:LINE: warning: ...`) as that one line on stderr,
    each time (not Python's `module.py:N: QwenGpuWarning: ...` once per place); other warnings as
    Python shows them. Inside warnings.catch_warnings()."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, QwenGpuWarning):
            err_console.print(f"[yellow]{_escape(str(message))}[/]")
        else:
            shown(message, category, filename, lineno, file, line)
    warnings.showwarning = show
    warnings.simplefilter("always", QwenGpuWarning)


class _ReadableArgument(TyperArgument):
    """An argument shown as FILE in the usage line and the help panel (typer shows `{file}` and
    a `<path>` type)."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw + ("..." if self.nargs != 1 else "")
        return name if self.required else f"[{name}]"

    def display_type_rich(self, ctx) -> None:
        return None


def _readable_metavars(group) -> None:
    """--help in click's style: `qgpu run [OPTIONS] FILE`, `--grid GRID`, `--max-tokens N`,
    `--model PATH`, and nothing after a flag (typer shows `{file}`, `<str>`, `<int>`, `<bool>`,
    `<list[str]>`)."""
    for command in [group, *getattr(group, "commands", {}).values()]:
        if command is not group and isinstance(command, TyperGroup):
            _readable_metavars(command)
            continue
        help_option = command.get_help_option(typer.Context(command, info_name=command.name))
        for param in [*command.params, *([help_option] if help_option else [])]:
            if param.metavar is not None:
                continue
            desc = getattr(param, "type_descriptor", None)
            if param.param_type_name == "argument":
                param.metavar = param.name.upper()
                if type(param) is TyperArgument:
                    param.__class__ = _ReadableArgument
            elif getattr(param, "is_flag", False):
                param.metavar = ""
            elif desc is not None and desc.annotation is int:
                param.metavar = "N"
            elif desc is not None and desc.is_path:
                param.metavar = "PATH"
            else:
                longest = max(param.opts, key=len)
                param.metavar = (longest.lstrip("-") if longest.startswith("--") else param.name).upper()


def _usage_message(e) -> str:
    """A usage error's line: --version after a command says where it goes (click would suggest
    an unrelated option: "No such option: --version (Possible options: --json)")."""
    if (isinstance(e, click_errors.NoSuchOption) and e.option_name == "--version" and e.ctx
            and e.ctx.parent is not None):
        return (f"{e.ctx.command_path} has no --version option; the version is qgpu's own option: "
                f"run qgpu --version")
    where = f" (see {e.ctx.command_path} --help)" if e.ctx else ""
    return e.format_message() + where


app = typer.Typer(help="qwengpu: run CUDA kernels on a 4-lane SIMT GPU compiled into a Qwen3.5 model. Counts: "
                       "blocks = machine blocks executed (one per warp scheduling turn) and instructions = "
                       "warp-instructions, the same on every engine; tokens (model engine) = generated tokens, "
                       "one forward pass each. Limits: --max-passes (blocks, interpreter) and --max-tokens (model "
                       "engine).",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False, cls=OneLineErrors)
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

DEVICE_HELP = "model engine: cpu, cuda, cuda:N or mps (default: the best available; the fast path runs on the CPU)"


# a compiler diagnostic's first line, `atom64.cu:2:5: error: ...` (clang) or `k.cu:12: error: ...`
# (NVRTC, rewritten by the front end): it names itself an error already
_COMPILER_DIAGNOSTIC = re.compile(r"^\S[^:]*:\d+(?::\d+)?: (?:fatal )?error: ")


def fail(e: Exception) -> None:
    """One red line (extra compiler diagnostics follow, dimmed) and exit code 1."""
    first, *rest = str(e).splitlines() or [type(e).__name__]
    if _COMPILER_DIAGNOSTIC.match(first):      # the compiler's own `file:line:col: error: ...`, said once
        err_console.print(f"[red]{_escape(first)}[/]")
    else:
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


MODEL_HELP = ("model, vllm: a merged checkpoint directory (default: the stand-in); llama.cpp: a GGUF file "
              "(qgpu export gguf)")
URL_HELP = "vllm: an OpenAI-compatible vLLM server to send the launches to (docs/engines.md)"
MAX_TOKENS_HELP = (f"model engine: generation limit per launch (default {DEFAULT_MAX_TOKENS:,}, about 22 s; "
                   f"suite: {SUITE_MAX_TOKENS:,})")
MAX_PASSES_HELP = f"interpreter only: limit on machine blocks executed (default {DEFAULT_MAX_PASSES:,})"
OPT_LEVELS = (0, 1, 2, 3)


def _check_opt(opt: int | None, frontend: str = "clang") -> int:
    """-O 0..3 (None: 2). NVRTC always optimises."""
    if opt is None:
        return 2
    if frontend == "nvrtc":
        raise ArgSyntaxError("-O applies to the clang front end only (NVRTC always optimises); drop it")
    if opt not in OPT_LEVELS:
        raise ArgSyntaxError(f"-O {opt}: choose 0, 1, 2 or 3")
    return opt


# a command-line option -> the Device option it sets (api.Engine.options names what each engine takes)
DEVICE_OPTION = {"show_tokens": "on_token", "stock": "fast", "batch": "max_batch"}


def _check_engine_options(engine: str, **given) -> None:
    """Refuse an option the engine does not take (api.ENGINES[engine].options), one line naming
    the first: --url is vllm's, most options the model engine's, --max-passes the interpreter's."""
    for name, value in given.items():
        option = DEVICE_OPTION.get(name, name)
        if value in (None, False) or option in ENGINES[engine].options:
            continue
        flag = "--" + name.replace("_", "-")
        users = [e for e, spec in ENGINES.items() if option in spec.options]
        if name == "url":
            raise ArgSyntaxError(f"--url names a vLLM server: it applies to --engine vllm only (this is --engine {engine})")
        if users == ["model"] or (name not in ("trace", "max_passes") and "model" in users):
            raise ArgSyntaxError(f"{flag} applies to the model engine only "
                                 f"(this is --engine {engine}); add --engine model or drop it")
        only = ", ".join(f"--engine {e}" for e in users)
        raise ArgSyntaxError(f"{flag} does not apply to --engine {engine} (only to {only}); drop it")


def _check_limits(max_tokens, max_passes) -> None:
    if max_tokens is not None and max_tokens < 1:
        raise ArgSyntaxError(f"--max-tokens must be at least 1, got {max_tokens}")
    if max_passes is not None and max_passes < 1:
        raise ArgSyntaxError(f"--max-passes must be at least 1, got {max_passes}")


def _show_progress(as_json: bool = False) -> bool:
    """Live progress: on stderr, only when it is a terminal and the output is not JSON."""
    return not as_json and err_console.is_terminal


class _StatusLine:
    """A transient status line on stderr (rich), entered as a context; a no-op when off."""

    first = ""                                           # the line's text before the first update

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = self.task = None

    def columns(self) -> tuple:
        raise NotImplementedError

    def __enter__(self):
        if self.enabled:
            from rich.progress import Progress
            self.bar = Progress(*self.columns(), console=err_console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.first, total=None)
        return self

    def __exit__(self, *exc):
        if self.bar:
            self.bar.stop()

    def update(self, **fields) -> None:
        if self.bar:
            self.bar.update(self.task, **fields)


class LaunchProgress(_StatusLine):
    """The model engine's phases (loading the model, prefill, generation: tokens, blocks,
    tokens/s), as a Device's on_phase / on_token callbacks."""

    first = "compiling"

    def __init__(self, enabled: bool, echo=None):
        super().__init__(enabled)
        self.echo = echo                                 # echo(token): tokens to stdout; no live line then
        self.tokens = self.passes = 0
        self.decode_start = 0.0
        self.label = ""

    def columns(self) -> tuple:
        from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn
        return SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()

    def describe(self, text: str) -> None:
        self.update(description=f"{self.label}{text}")

    def phase(self, name: str) -> None:
        if name == "decode":
            self.decode_start = time.perf_counter()
            if self.echo and self.bar:               # the live line would garble the tokens on stdout
                self.bar.stop()
                self.bar = None
                return
        self.describe({"load": "loading the model", "prefill": "prefill (the launch prompt)",
                       "decode": "generating", "engine": "the engine runs the launch (its tokens come at the end)"}[name])

    def token(self, token) -> None:
        if self.echo:
            self.echo(token)
        self.tokens += 1
        self.passes += runs_pass(token)
        if self.bar and self.tokens % 50 == 1:
            elapsed = time.perf_counter() - self.decode_start
            rate = f", {self.tokens / elapsed:,.0f} tokens/s" if elapsed > 0.2 else ""
            self.describe(f"generating: {plural(self.tokens, 'token', grouped=True)}, "
                          f"{plural(self.passes, 'pass', 'passes', grouped=True)}{rate}")


@app.command()
def run(file: Path = typer.Argument(..., help="CUDA source file (.cu)"),
        kernel: Optional[str] = typer.Option(None, "--kernel", "-k",
                                             help="the __global__ function to launch (default: the only one)"),
        grid: str = typer.Option("1", help="grid size: 2 or 2,2 or 2,1,1"),
        block: str = typer.Option("4", help="block size: 4 or 4,2"),
        arg: Optional[List[str]] = typer.Option(None, "--arg", "-a",
                                                help="kernel argument, once per parameter: 5, i32:[1,2], u32:zeros(8), "
                                                     "1.5f, f32:[1.5,2]"),
        engine: str = typer.Option("interp", help=f"engine: {', '.join(ENGINES)}"),
        frontend: str = typer.Option("clang", help=f"front end: {', '.join(FRONTENDS)}"),
        opt: Optional[int] = typer.Option(None, "-O", help="clang optimisation level 0..3, default 2 (NVRTC always "
                                                   "optimises)"),
        show_ptx: bool = typer.Option(False, "--show-ptx", help="print the PTX"),
        show_isa: bool = typer.Option(False, "--show-isa", help="print the lowered machine program"),
        trace: bool = typer.Option(False, "--trace", help="print every pass (interp: each machine block; "
                                   "model: each generated token)"),
        as_json: bool = typer.Option(False, "--json", help="print JSON: arrays, counts, times, printf output"),
        model: Optional[Path] = typer.Option(None, "--model", help=MODEL_HELP),
        url: Optional[str] = typer.Option(None, "--url", help=URL_HELP),
        dtype: Optional[str] = typer.Option(None, "--dtype", help=f"model engine: {', '.join(DTYPES)} (default float32)"),
        check: Optional[str] = typer.Option(None, "--check", help="model engine: none, or replay (every token against the interpreter)"),
        show_tokens: bool = typer.Option(False, "--show-tokens", help="model engine: print each token as it is generated"),
        max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=MAX_TOKENS_HELP),
        max_passes: Optional[int] = typer.Option(None, "--max-passes", help=MAX_PASSES_HELP),
        stock: bool = typer.Option(False, "--stock", help="model engine: the stock transformers forward, not the fast path"),
        device: Optional[str] = typer.Option(None, "--device", help=DEVICE_HELP)):
    """Compile FILE, launch KERNEL once and print the final arrays, then a closing line: counts
    (blocks, instructions; model: tokens) and the wall time (model: load / prefill / decode).

    --arg, once per kernel parameter: a scalar (5, -3, 0x1f, u32:7; a float 1.5, 1.5f, -2.5e-3,
    inf, nan, 0f3FC00000 for exact bits) or an array (i32:[1,2,3], u32:[1,2], i32:zeros(8),
    u32:range(8), i32:full(8,-1), f32:[1.5,2], [1 2.5], f32:zeros(8)). float32 arrays print as
    floats (a NaN with its bits); --json adds their exact bits under "bits".
    """
    wall = time.perf_counter()
    try:
        _choice("engine", engine, ENGINES)
        _check_engine_options(engine, url=url, check=check, show_tokens=show_tokens, device=device, stock=stock,
                              dtype=dtype, model=model, max_tokens=max_tokens)
        if as_json and (show_ptx or show_isa or trace or show_tokens):
            raise ArgSyntaxError("--json prints JSON alone: drop --show-ptx, --show-isa, --trace and --show-tokens")
        _check_engine_options(engine, trace=trace, max_passes=max_passes)
        opt = _check_opt(opt, frontend)
        _check_limits(max_tokens, max_passes)
        max_passes = max_passes or DEFAULT_MAX_PASSES
        if not file.is_file():
            raise QwenGpuError(f"{file}: no such file" if not file.exists() else f"{file}: not a file")
        source = _read_source(file)
        args = [parse_arg(a) for a in arg or []]
        dims = parse_dims("grid", grid), parse_dims("block", block)
        echo = (lambda token: console.print(str(token), markup=False)) if show_tokens else None
        generates = ENGINES[engine].generates
        with LaunchProgress(_show_progress(as_json) and generates, echo) as progress:
            dev = _device(engine, frontend, opt, model, dtype, check, max_tokens, stock,
                          progress.token if generates else None, device, max_passes=max_passes,
                          on_phase=progress.phase, print_output=not as_json, url=url)
            module = dev.compile(source, filename=file.name)
            if show_ptx:
                console.print(module.ptx, markup=False)
            fn = module.get_function(module.kernel(kernel))
            if show_isa:
                console.print(fn.program_for(dims[1]).listing(), markup=False)
            result = fn(grid=dims[0], block=dims[1], args=args, trace=trace)
    except QwenGpuError as e:
        fail(e)
    wall = time.perf_counter() - wall
    if as_json:
        print(json.dumps(_run_json(fn, args, dims, result, wall), indent=2))
        err_console.print(f"[dim]{_stats(result, wall)}[/]")
        return
    for i, step in enumerate(result.trace or []):
        console.print(str(step) if result.engine != "interp" else _step_line(i, step), markup=False)
    for name, value in zip(fn.arg_names, args):
        if isinstance(value, np.ndarray):
            console.print(f"{name} = {_show_array(value)}", markup=False)
    console.print(f"[dim]{_escape(_stats(result, wall))}[/]")


def format_f32(value) -> str:
    """A float32 as `qgpu run` shows it: the shortest decimal that reads back as the same float32
    (Python's repr rules: 1.5, 2.0, -0.0, 0.1, 1e-45, 3.4028235e+38), inf and -inf, and a NaN with
    its bits, nan(0x7fffffff), since NaNs differ only there."""
    x = np.float32(value)
    if np.isnan(x):
        return f"nan(0x{int(np.array(x).view(np.uint32)):08x})"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x != 0 and not 1e-4 <= abs(x) < 1e16:
        return np.format_float_scientific(x, unique=True, trim="-", exp_digits=2)
    return np.format_float_positional(x, unique=True, trim="0")


def _show_array(value: np.ndarray) -> str:
    """An array argument's final contents: int32/uint32 as Python prints its list, float32 by format_f32."""
    if value.dtype == np.float32:
        return f"[{', '.join(format_f32(x) for x in value)}]"
    return str(value.tolist())


def _json_f32(value):
    """A float32 as a JSON value: a number that reads back (through a float64) as the same float32, or
    "inf", "-inf", "nan" (JSON has no number for them: the exact bits are beside it)."""
    x = np.float32(value)
    if not np.isfinite(x):
        return "nan" if np.isnan(x) else "inf" if x > 0 else "-inf"
    short = float(np.format_float_positional(x, unique=True))
    return short if np.float32(short) == x else float(x)      # float(x) is x exactly


def _f32_bits(value) -> str:
    return f"0x{int(np.array(value, np.float32).view(np.uint32)):08x}"


def _json_arg(value):
    if isinstance(value, np.ndarray):
        return [_json_f32(x) for x in value] if value.dtype == np.float32 else value.tolist()
    return _json_f32(value) if isinstance(value, np.floating) else value


def _read_source(file: Path) -> str:
    try:
        return file.read_text()
    except UnicodeDecodeError:
        raise QwenGpuError(f"{file}: not a text file (not UTF-8)") from None
    except OSError as e:
        raise QwenGpuError(f"{file}: cannot read it ({e.strerror})") from None


def _json_bits(names, args) -> dict:
    """{"bits": {name: ["0x3fc00000", ...] or "0x3fc00000"}} for the float32 arguments (arrays and
    scalars): their exact bits, which the numbers can't carry for inf, nan and NaN payloads; {}
    when no argument is a float."""
    bits = {n: [_f32_bits(x) for x in v] if isinstance(v, np.ndarray) else _f32_bits(v)
            for n, v in zip(names, args) if getattr(v, "dtype", None) == np.float32}
    return {"bits": bits} if bits else {}


def _run_json(fn, args, dims, result, wall: float) -> dict:
    return {"kernel": fn.name, "engine": result.engine, "grid": list(dims[0]), "block": list(dims[1]),
            "arrays": {n: _json_arg(v) for n, v in zip(fn.arg_names, args) if isinstance(v, np.ndarray)},
            "scalars": {n: _json_arg(v) for n, v in zip(fn.arg_names, args) if not isinstance(v, np.ndarray)},
            **_json_bits(fn.arg_names, args),
            "blocks": result.blocks, "instructions": result.instructions, "tokens": result.tokens,
            "passes": result.passes if result.tokens is not None else None,
            "seconds": result.seconds, "load_seconds": result.load_seconds,
            "prefill_seconds": result.prefill_seconds, "decode_seconds": result.decode_seconds,
            "wall_seconds": wall, "output": list(result.output)}


def _device(engine, frontend, opt, model, dtype, check, max_tokens, stock, on_token=None, device=None, *,
            max_passes=DEFAULT_MAX_PASSES, on_phase=None, print_output=True, url=None, micro_code=False) -> Device:
    if engine == "model" and stock:             # the fast path never imports transformers
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()        # no loading bars or fallback notes between the tokens
        hf_logging.disable_progress_bar()
    dtype = dtype or "float32"
    return Device(_choice("engine", engine, ENGINES), _choice("frontend", frontend, FRONTENDS), opt,
                  model=model, dtype=_choice("dtype", dtype, DTYPES),
                  check=None if _choice("check", check or "none", ("none", "replay")) == "none" else check,
                  max_tokens=max_tokens, on_token=on_token, fast=not stock, device=device,
                  max_passes=max_passes, on_phase=on_phase if ENGINES[engine].generates else None,
                  print_output=print_output, url=url, micro_code=micro_code)


def _step_line(i: int, step) -> str:
    """One pass of the trace: where, which lanes, what it wrote."""
    regs = " ".join(f"l{lane}.r{reg}={value:#x}" for lane, reg, value in step.reg_writes)
    mem = " ".join(f"{space.value}[{word}]={value:#x}" for space, word, value in step.mem_writes)
    return f"pass {i}: block {step.block_id} warp {step.warp} B{step.pc} mask {step.mask:#06b}  {regs} {mem}".rstrip()


def _stats(result, wall: float | None = None) -> str:
    """The closing line: counts, then the wall time (model engine: split into load, prefill,
    decode and the rest: compile, lowering, checks)."""
    parts = [f"engine {result.engine}"]
    if result.tokens is not None:
        rate = (f" at {(result.tokens - 1) / result.decode_seconds:,.0f} tokens/s"    # the prefill wrote the first
                if result.decode_seconds and result.tokens > 1 else "")
        parts.append(f"{plural(result.tokens, 'token', grouped=True)} (forward passes){rate}")
    if result.blocks is not None:
        parts.append(f"{plural(result.blocks, 'block', grouped=True)}, "
                     f"{plural(result.instructions, 'instruction', grouped=True)}")
    if wall is None:
        parts.append(f"{result.seconds:.3f} s")
    elif result.engine == "model":
        load, prefill, decode = result.load_seconds or 0.0, result.prefill_seconds or 0.0, result.decode_seconds or 0.0
        other = max(0.0, wall - load - prefill - decode)
        parts.append(f"wall {wall:.2f} s = load {load:.2f} + prefill {prefill:.2f} + decode {decode:.2f} "
                     f"+ other {other:.2f}")
    else:
        parts.append(f"wall {wall:.2f} s (launch {result.seconds:.3f} s)")
    return ", ".join(parts)


@app.command()
def suite(engine: str = typer.Option("interp", help=f"engine: {', '.join(ENGINES)}"),
          frontend: str = typer.Option("clang", help=f"front end: {', '.join(FRONTENDS)}"),
          pattern: Optional[str] = typer.Option(None, "-k", help="only kernels whose name contains this (or matches this glob)"),
          as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
          directory: Optional[Path] = typer.Option(None, "--dir", help="kernel directory (default: ./kernels)"),
          opt: Optional[int] = typer.Option(None, "-O", help="clang optimisation level 0..3, default 2 (NVRTC always "
                                                   "optimises)"),
          model: Optional[Path] = typer.Option(None, "--model", help=MODEL_HELP),
          url: Optional[str] = typer.Option(None, "--url", help=URL_HELP),
          dtype: Optional[str] = typer.Option(None, "--dtype", help=f"model engine: {', '.join(DTYPES)} (default float32)"),
          check: Optional[str] = typer.Option(None, "--check", help="model engine: none, or replay (every token against the interpreter)"),
          max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=MAX_TOKENS_HELP),
          max_passes: Optional[int] = typer.Option(None, "--max-passes", help=MAX_PASSES_HELP),
          stock: bool = typer.Option(False, "--stock", help="model engine: the stock transformers forward, not the fast path"),
          batch: Optional[int] = typer.Option(None, "--batch", help=f"model engine, fast path: launches decoded "
                                              f"together (default {DEFAULT_BATCH}; 1: one at a time)"),
          device: Optional[str] = typer.Option(None, "--device", help=DEVICE_HELP),
          micro_code: bool = typer.Option(False, "--micro-code", help="run the model engine's programs (its "
                                          "micro-coded ops expanded) on this engine, e.g. the interpreter")):
    """Run the kernel suite; exit code 1 if any kernel fails (or none matches -k). Columns:
    blocks (machine blocks executed) and instructions, the same on every engine; tokens (model)."""
    from qwengpu.suite import DEFAULT_DIR, discover, run_suite, unpaired
    if directory is None:
        directory = Path("kernels") if Path("kernels").is_dir() else DEFAULT_DIR
    wall = time.perf_counter()
    try:
        _choice("engine", engine, ENGINES)
        _check_engine_options(engine, url=url, check=check, device=device, stock=stock, dtype=dtype, model=model,
                              max_tokens=max_tokens, batch=batch, max_passes=max_passes)
        opt = _check_opt(opt, frontend)
        _check_limits(max_tokens, max_passes)
        max_passes = max_passes or DEFAULT_MAX_PASSES
        batch = DEFAULT_BATCH if batch is None else batch
        if batch < 1:
            raise QwenGpuError(f"--batch must be at least 1, got {batch}")
        for note in unpaired(directory, pattern):
            err_console.print(f"[bold yellow]warning:[/] [yellow]{_escape(note)}[/]")
        if not discover(directory, pattern):
            raise QwenGpuError(f"no kernel matches {pattern!r} in {directory}" if pattern
                               else f"no kernels (NAME.cu with NAME.py) in {directory}")
        with SuiteProgress(_show_progress(as_json)) as progress:
            def on_report(report):
                progress.report(report)
                if not as_json:          # JSON: in each kernel's "output"
                    _print_output(report.name, report.output)
            generates = ENGINES[engine].generates
            dev = _device(engine, frontend, opt, model, dtype, check,
                          max_tokens or (SUITE_MAX_TOKENS if generates else None), stock, device=device,
                          max_passes=max_passes, on_phase=progress.phase, url=url, micro_code=micro_code)
            summary = run_suite(pattern=pattern, directory=directory, max_batch=None if stock or batch == 1 else batch,
                                device=dev, on_start=progress.start, on_report=on_report,
                                on_token=progress.token if generates else None)
    except QwenGpuError as e:
        fail(e)
    wall = time.perf_counter() - wall
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        console.print(_suite_table(summary))
        tokens = sum(k["tokens"] or 0 for k in summary["kernels"])
        console.print(f"[dim]{plural(len(summary['kernels']), 'kernel')} in {wall:.1f} s"
                      + (f", {plural(tokens, 'token', grouped=True)}" if generates else "") + "[/]")
    if summary["failed"] or not summary["kernels"]:
        raise typer.Exit(1)


def _print_output(kernel: str, output: list[str]) -> None:
    """A suite kernel's device printf output on stdout, each line after the kernel's name."""
    for line in "".join(output).splitlines():
        console.print(f"{kernel}: {line}", markup=False)


class SuiteProgress(_StatusLine):
    """The suite: overall (kernels done of all, failures, tokens, tokens/s) and a line per
    finished kernel."""

    def __init__(self, enabled: bool):
        super().__init__(enabled)
        self.done = self.failed = self.tokens = 0
        self.total, self.start_time, self.status = 0, time.perf_counter(), ""
        self.running: dict[str, int] = {}

    def columns(self) -> tuple:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        return (TextColumn("suite"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.description}"))

    def _refresh(self) -> None:
        if not self.bar:
            return
        text = self.status
        if self.tokens:
            elapsed = time.perf_counter() - self.start_time
            text = f"{plural(self.tokens, 'token', grouped=True)}, {self.tokens / elapsed:,.0f} tokens/s"
            if self.running:
                text += "; running " + ", ".join(f"{n} ({t:,})" for n, t in list(self.running.items())[:3])
        if self.failed:
            text += f"; [red]{self.failed} failed[/]"
        self.update(completed=self.done, total=self.total or None, description=text)

    def phase(self, name: str) -> None:
        if name == "load":
            self.status = "loading the model"
        elif name == "decode" and self.status == "loading the model":
            self.status = ""
        self._refresh()

    def start(self, cases) -> None:
        self.total, self.start_time = len(cases), time.perf_counter()
        self._refresh()

    def token(self, name: str, token) -> None:
        if self.status == "loading the model":
            self.status, self.start_time = "", time.perf_counter()
        self.tokens += 1
        self.running[name] = self.running.get(name, 0) + 1
        if self.tokens % 100 == 1:
            self._refresh()

    def report(self, report) -> None:
        self.done += 1
        self.failed += not report.passed
        self.running.pop(report.name, None)
        if self.bar:
            tokens = f", {plural(report.tokens, 'token', grouped=True)}" if report.tokens else ""
            mark = "[green]passed[/]" if report.passed else "[red]failed[/]"
            self.bar.console.print(f"  {_escape(report.name)} {mark}{tokens}, {report.seconds:.1f} s")
        self._refresh()


def _suite_table(summary: dict) -> Table:
    table = Table(title=f"kernel suite on {summary['engine']} ({summary['frontend']}): "
                        f"{summary['passed']} passed, {summary['failed']} failed")
    model = summary["engine"] == "model"
    for col, justify in (("kernel", "left"), ("status", "left"), ("blocks", "right"),
                         ("instructions", "right"), *((("tokens", "right"),) if model else ()),
                         ("seconds", "right"), ("detail", "left")):
        table.add_column(col, justify=justify, overflow="fold")
    for k in summary["kernels"]:
        status = "[green]passed[/]" if k["passed"] else "[red]failed[/]"
        table.add_row(k["name"], status, _num(k["blocks"]), _num(k["instructions"]),
                      *((_num(k["tokens"]),) if model else ()), f"{k['seconds']:.2f}", _escape(k["reason"]))
    return table


def _num(v) -> str:
    return "-" if v is None else str(v)


@app.command()
def bench(as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
          kernels: Optional[str] = typer.Option(None, "--kernels", help="comma-separated suite kernels "
                                                "(default: dot,nested_divergence,pool3_shared,atomic_inc,warp_rotate)"),
          stock_tokens: int = typer.Option(8, "--stock-tokens", help="tokens the stock path decodes per launch (slow)"),
          dtype: str = typer.Option("float32", "--dtype", help=f"{', '.join(DTYPES)}"),
          model: Optional[Path] = typer.Option(None, "--model", help="merged checkpoint (default: the stand-in)"),
          step: str = typer.Option("c", "--fast-step", help="the fast path's step: c (native.c) or torch (its torch ops)"),
          max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=f"limit on each fast launch's tokens "
                                                   f"(default {SUITE_MAX_TOKENS:,}: suite kernels)"),
          max_passes: Optional[int] = typer.Option(None, "--max-passes", help=MAX_PASSES_HELP)):
    """The exact fast path against the stock transformers forward on a few suite kernels, side
    by side; exit code 1 unless every token matches (stock vs fast, fast vs the interpreter)."""
    from rich.progress import Progress

    from qwengpu.bench import STEPS, check_options, parse_kernels, run_bench
    names = parse_kernels(kernels)
    try:
        _choice("dtype", dtype, DTYPES)
        _choice("fast-step", step, STEPS)
        check_options(names, stock_tokens)
        _check_limits(max_tokens, max_passes)
        _device("model", "clang", 2, None, dtype, "none", 1, False)     # quiets transformers' logging
        with Progress(console=err_console, transient=True) as bar:
            task = bar.add_task("loading the model", total=None)

            def show(kernel, done, total):
                bar.update(task, description=f"{kernel}: stock path, token {done} of {total}",
                           completed=done, total=total)
            summary = run_bench(names, stock_tokens, dtype, model, step, progress=show,
                                max_tokens=max_tokens or SUITE_MAX_TOKENS, max_passes=max_passes or DEFAULT_MAX_PASSES)
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
    table = Table(title=f"qgpu bench: {s['model']} ({s['dtype']}); stock path: first {plural(s['stock_tokens'], 'token')}",
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
        table = Table(title=f"circuit check ({plural(cases, 'case')} per gadget and dtype)")
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
                                      help="residual (exact, default) or eps (the norm/eps recipe); see docs/build.md"),
          exact_bf16: bool = typer.Option(False, "--exact-bf16",
                                          help="text computed with exactly the base's weights in bf16 too: a circuit width "
                                               "with n + C = 4**k n and an untied head (costs width; docs/build.md)")):
    """Build a merged Qwen3_5ForCausalLM checkpoint: circuit layers in front of the base's layers."""
    try:
        _choice("dtype", dtype, ("bfloat16", "float32"))
        _choice("rescale", rescale, ("residual", "eps"))
        _check_base(base)
        if out.exists() and not out.is_dir():
            raise QwenGpuError(f"--out {out}: exists and is not a directory")
        if out.is_dir() and any(out.iterdir()) and not force:
            raise QwenGpuError(f"--out {out} is not empty; pass --force to overwrite it")
        from qwengpu.model.merge import build as build_checkpoint    # torch and transformers: after the checks
        path = build_checkpoint(base, out, dtype=dtype, force=force, rescale=rescale, exact_bf16=exact_bf16)
    except QwenGpuError as e:
        fail(e)
    console.print(f"merged checkpoint written to [bold]{_escape(str(path))}[/]")


def _check_base(base: str) -> None:
    """--base: "standin" or a checkpoint directory (cheap checks, before importing torch)."""
    if base != "standin" and not (Path(base) / "config.json").is_file():
        raise QwenGpuError(f"--base {base}: not a checkpoint directory (no config.json) and not \"standin\"")


eval_app = typer.Typer(help="Measure the merged model.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("kl")
def eval_kl(base: str = typer.Option(..., "--base", help='the base checkpoint directory, or "standin"'),
            merged: Optional[Path] = typer.Option(None, "--merged", help="merged checkpoint (default: build one in fp32)"),
            exact_bf16: bool = typer.Option(False, "--exact-bf16",
                                            help="without --merged: build it as qgpu build --exact-bf16 does"),
            as_json: bool = typer.Option(False, "--json", help="print JSON")):
    """KL(base || merged) on built-in multilingual text, fp32 and bf16, and the circuit's
    largest output on text positions."""
    try:
        _check_base(base)
        if merged is not None and not (merged / "config.json").is_file():
            raise QwenGpuError(f"--merged {merged}: not a model checkpoint (no config.json)")
        from transformers.utils import logging as hf_logging     # heavy: after the checks

        from qwengpu.model.kl import eval_kl as measure
        hf_logging.set_verbosity_error()
        report = measure(base, merged, exact_bf16=exact_bf16)
    except QwenGpuError as e:
        fail(e)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            console.print(f"{key:<28} {value}")


export_app = typer.Typer(help="Export a merged checkpoint for other inference engines.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("gguf")
def export_gguf(model: Path = typer.Option(..., "--model", help="a merged checkpoint directory (qgpu build)"),
                out: Path = typer.Option(..., "--out", help="the GGUF file to write"),
                gguf_type: str = typer.Option("bf16", "--type", help="f32 or bf16 (exact), f16 (not exact in general)"),
                python: str = typer.Option(".venv-llamacpp/bin/python", "--python",
                                           help="the llama.cpp venv's python (scripts/install_llamacpp.sh)")):
    """A GGUF file for llama.cpp, made by llama.cpp's own converter, norm gains checked exact
    (qwengpu/engines/gguf.py, docs/engines-llamacpp.md)."""
    from qwengpu.engines.gguf import export_gguf as convert
    try:
        report = convert(model, out, gguf_type, python=python, on_message=lambda m: err_console.print(_escape(m)))
    except QwenGpuError as e:
        fail(e)
    console.print(f"wrote {report['out']} ({report['type']}, {report['bytes'] / 2**30:.2f} GiB) "
                  f"in {report['seconds']:.0f} s")


CHAT_MODES = ("normal", "advanced")


@app.command()
def chat(model: Path = typer.Option(..., "--model", help="a merged checkpoint directory (qgpu build)"),
         mode: str = typer.Option("normal", "--mode", help="normal (the model states integer expressions: "
                                  "gpu_eval) or advanced (the model writes CUDA kernels: gpu_cuda)"),
         once: Optional[str] = typer.Option(None, "--once", help="ask this one question, print the answer, exit"),
         as_json: bool = typer.Option(False, "--json", help="one JSON document per turn (questions from --once "
                                      "or stdin, one a line)"),
         max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="assistant tokens per turn (default 1,024)"),
         launch_max_tokens: Optional[int] = typer.Option(None, "--launch-max-tokens",
                                                         help=f"GPU tokens per launch (default {DEFAULT_MAX_TOKENS:,})"),
         dtype: Optional[str] = typer.Option(None, "--dtype", help=f"{', '.join(DTYPES)} (default: the "
                                             "checkpoint's, bfloat16 for the stand-in)"),
         device: Optional[str] = typer.Option(None, "--device", help="the text model's torch device: cpu, cuda, "
                                              "cuda:N or mps (default: the best available; launches run on the CPU)")):
    """Chat with the model; it computes on the GPU inside its own weights. The answer streams as
    it is written; each GPU call shows its expression or kernel, a live line (tokens, passes,
    time) and its result."""
    try:
        _choice("mode", mode, CHAT_MODES)
        if dtype is not None:
            _choice("dtype", dtype, DTYPES)
        _check_limits(max_tokens, None)
        if launch_max_tokens is not None and launch_max_tokens < 1:
            raise ArgSyntaxError(f"--launch-max-tokens must be at least 1, got {launch_max_tokens}")
        from qwengpu.api import resolve_device
        from qwengpu.chat.session import DEFAULT_TURN_TOKENS, ChatSession
        view = ChatView(_show_progress(as_json), quiet=as_json)
        session = ChatSession(model, mode, dtype=dtype, device=resolve_device(device), events=view,
                              max_tokens=max_tokens or DEFAULT_TURN_TOKENS,
                              launch_max_tokens=launch_max_tokens or DEFAULT_MAX_TOKENS)
        if not as_json and once is None:
            console.print(f"[dim]chat with {_escape(str(model))} ({mode} mode); an empty line or Ctrl-D ends it[/]")
        for question in _questions(once, prompt=not as_json):
            turn = session.ask(question)
            if as_json:
                print(json.dumps({"model": str(model), "mode": mode, **turn.to_dict()}))
            else:
                view.finish(turn)
    except QwenGpuError as e:
        fail(e)


def _questions(once: str | None, prompt: bool):
    """--once, or the user's lines until an empty one or the end of input."""
    if once is not None:
        yield once
        return
    while True:
        try:
            line = console.input("[bold]you>[/] ") if prompt else input()
        except EOFError:
            return
        if not line.strip():
            return
        yield line.strip()


_CALL_TEXT = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.S)


class ChatView:
    """A turn on the terminal (a session's ChatEvents): the text as it streams, without the
    tool-call markup; each GPU call as it runs, with a live line on stderr; the result."""

    def __init__(self, live: bool, quiet: bool = False):
        self.live, self.quiet = live, quiet
        self.text_so_far = self.shown = ""
        self.status = None

    def text(self, piece: str) -> None:
        self.text_so_far += piece
        visible = _CALL_TEXT.sub("", self.text_so_far)
        if not self.quiet and len(visible) > len(self.shown):
            console.print(visible[len(self.shown):], end="", markup=False)
        self.shown = visible

    def call_start(self, call) -> None:
        self.text_so_far = self.shown = ""
        if self.quiet:
            return
        console.print()
        args = call.arguments
        if call.name == "gpu_cuda" and "source" in args:
            from rich.syntax import Syntax
            console.print(f"[bold cyan]GPU call[/] gpu_cuda grid={_escape(args.get('grid', '?').strip())} "
                          f"block={_escape(args.get('block', '?').strip())} args={_escape(args.get('args', '').strip())}")
            console.print(Syntax(args["source"].strip("\n"), "cpp", theme="ansi_dark"))
        else:
            what = args.get("expression", "").strip() or call.error or str(args)
            console.print(f"[bold cyan]GPU call[/] {_escape(call.name or 'tool call')}: {_escape(what)}")
        if self.live:
            self.status = err_console.status("GPU: compiling")
            self.status.start()

    def load_start(self, path, dtype: str) -> None:
        if self.live:
            err_console.print(f"[dim]loading {_escape(str(path))} ({SHORT.get(dtype, dtype)})...[/]", end="")

    def load_end(self, seconds: float | None) -> None:
        if self.live:
            err_console.print(f"[dim] done in {seconds:.1f} s[/]" if seconds is not None else "")

    def launch_token(self, tokens: int, passes: int, seconds: float) -> None:
        if self.status and tokens % 25 == 1:
            self.status.update(f"GPU: {plural(tokens, 'token', grouped=True)}, "
                               f"{plural(passes, 'pass', 'passes', grouped=True)}, {seconds:.1f} s")

    def call_end(self, gpu) -> None:
        if self.status:
            self.status.stop()
            self.status = None
        if self.quiet:
            return
        colour = "green" if gpu.ok else "red"
        console.print(f"[{colour}]=>[/] {_escape(gpu.response)}")
        console.print(f"[dim]{plural(gpu.tokens, 'GPU token', grouped=True)}, "
                      f"{plural(gpu.passes, 'pass', 'passes', grouped=True)}, {gpu.seconds:.1f} s[/]")

    def finish(self, turn) -> None:
        self.text_so_far = self.shown = ""
        limit = ", stopped at the token limit (--max-tokens)" if turn.stopped == "max_tokens" else ""
        console.print()
        console.print(f"[dim]{plural(turn.tokens, 'token', grouped=True)}, {plural(len(turn.calls), 'GPU call')}, "
                      f"{turn.seconds:.1f} s{limit}[/]")


@eval_app.command("chat")
def eval_chat(model: Path = typer.Option(..., "--model", help="a merged checkpoint directory (qgpu build)"),
              as_json: bool = typer.Option(False, "--json", help="print JSON: the summary, then every item"),
              max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="assistant tokens per item "
                                                       "(default 1,024 normal, 3,072 advanced; 4 on the stand-in)"),
              launch_max_tokens: Optional[int] = typer.Option(None, "--launch-max-tokens",
                                                              help=f"GPU tokens per launch (default {DEFAULT_MAX_TOKENS:,})")):
    """The chat eval: 26 everyday numeric questions (normal mode: did the model call the GPU, is its
    answer right) and 6 kernel-writing tasks (advanced mode: right on the first try, within 3)."""
    try:
        _check_limits(max_tokens, None)
        from qwengpu.chat.evalset import ADVANCED, NORMAL, run_eval
        sizes = {"normal": len(NORMAL), "advanced": len(ADVANCED)}

        def progress(mode: str, i: int, r: dict) -> None:
            used, right = (r["used_gpu"], r["correct"]) if mode == "normal" else (r["tries"] > 0, r["within_3_tries"])
            err_console.print(f"[dim]{mode} {i + 1}/{sizes[mode]}: {'GPU used' if used else 'no GPU'}, "
                              f"{'right' if right else 'wrong'}, {plural(r['tokens'], 'token', grouped=True)}, "
                              f"{r['seconds']:.1f} s[/]")
        report = run_eval(model, max_tokens=max_tokens, launch_max_tokens=launch_max_tokens, on_item=progress)
    except QwenGpuError as e:
        fail(e)
    if as_json:
        print(json.dumps(report, indent=2))
        return
    n, a = report["normal"], report["advanced"]
    console.print(f"normal:   {n['used_gpu']}/{n['n']} used the GPU, {n['correct']}/{n['n']} right")
    console.print(f"advanced: {a['first_try']}/{a['n']} right on the first try, {a['within_3_tries']}/{a['n']} within 3 tries")
    if report.get("note"):
        console.print(f"[bold yellow]{_escape(report['note'])}[/]")


DEMOS = ("dot", "mlp")


@app.command()
def demo(which: str = typer.Argument("dot", help="dot: dot([1,2,3], [4,5,6]); mlp: the digit classifier"),
         engine: str = typer.Option("model", help=f"engine: {', '.join(ENGINES)}"),
         stock: bool = typer.Option(False, "--stock", help="model engine: the stock transformers forward "
                                    "instead of the exact fast path (slow on a CPU)"),
         max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=MAX_TOKENS_HELP),
         max_passes: Optional[int] = typer.Option(None, "--max-passes", help=MAX_PASSES_HELP),
         device: Optional[str] = typer.Option(None, "--device", help=DEVICE_HELP),
         floats: bool = typer.Option(False, "--float", help="the float dot: dot([1.5,2,3], [4,5,6.25]) in fp32"),
         images: int = typer.Option(5, "--images", help="mlp: test images to classify")):
    """dot([1,2,3], [4,5,6]) run by the model itself (the stand-in merged model, built on first use),
    replay checked, with the tokens as the model writes them and a closing line; --float: the same
    in float32 (kernels/float/fdot.cu). mlp: a digit classifier trained here on scikit-learn's 8x8
    digits classifies test images in the model (qwengpu/digits), each drawn with its label."""
    if which not in DEMOS:
        fail(ArgSyntaxError(f"demo {which!r}: choose one of {', '.join(DEMOS)}"))
    if which == "mlp":
        _demo_mlp(engine, stock, max_tokens, max_passes, device, floats, images)
        return
    name, a, b, kind = ("fdot", [1.5, 2, 3], [4, 5, 6.25], np.float32) if floats else ("dot", [1, 2, 3], [4, 5, 6], np.int32)
    shown = f"dot([{','.join(map(str, a))}], [{','.join(map(str, b))}])"
    a, b, out = np.array(a, kind), np.array(b, kind), np.zeros(1, kind)
    tokens = []

    def show(token):                       # the launch as the model writes it, token by token
        tokens.append(str(token))
        console.print(str(token), end="  ", markup=False, soft_wrap=True)

    wall = time.perf_counter()
    try:
        _choice("engine", engine, ENGINES)
        _check_engine_options(engine, stock=stock, device=device, max_tokens=max_tokens, max_passes=max_passes)
        _check_limits(max_tokens, max_passes)
        max_passes = max_passes or DEFAULT_MAX_PASSES
        from qwengpu.suite import DEFAULT_DIR
        source = DEFAULT_DIR / ("float" if floats else "") / f"{name}.cu"
        # the tokens go to stdout as they come: only the load and the prefill show a live line
        with LaunchProgress(_show_progress() and engine == "model", show) as progress:
            dev = _device(engine, "clang", 2, None, "float32", "replay" if engine == "model" else "none",
                          max_tokens, stock, progress.token if engine == "model" else None, device,
                          max_passes=max_passes, on_phase=progress.phase)
            fn = dev.compile(source.read_text(), filename=str(source)).get_function(name)
            result = fn(grid=1, block=4, args=[a, b, out, 3])
    except QwenGpuError as e:
        fail(e)
    wall = time.perf_counter() - wall
    if tokens:
        console.print()
    console.print(f"{shown} = [bold]{out[0].item()}[/]")
    console.print(f"[dim]{_escape(_stats(result, wall))}[/]")


def _demo_mlp(engine, stock, max_tokens, max_passes, device, floats, images) -> None:
    """qgpu demo mlp: IMAGES_PER_LAUNCH test images a launch, each drawn with its label and the
    model's answer; every logit must equal NumPy's (digits.reference_logits) bit for bit."""
    from qwengpu import digits
    wall = time.perf_counter()
    try:
        _choice("engine", engine, ENGINES)
        _check_engine_options(engine, stock=stock, device=device, max_tokens=max_tokens, max_passes=max_passes)
        _check_limits(max_tokens, max_passes)
        if floats:
            raise ArgSyntaxError("--float applies to the dot demo only")
        train, test = digits.load()
        if not 1 <= images <= len(test.images):
            raise ArgSyntaxError(f"--images {images}: choose 1 to {len(test.images)}")
        net = digits.train(train)
        console.print(f"a {digits.PIXELS}-{digits.HIDDEN}-{digits.CLASSES} network trained on "
                      f"{len(train.images):,} digits in {time.perf_counter() - wall:.1f} s; "
                      f"{images} test images, {digits.IMAGES_PER_LAUNCH} a launch, in the {engine} engine")
        dev = _device(engine, "clang", 2, None, "float32", "replay" if engine == "model" else "none",
                      max_tokens, stock, None, device, max_passes=max_passes or DEFAULT_MAX_PASSES)
        fn = dev.compile(digits.KERNEL.read_text(), filename=str(digits.KERNEL)).get_function("mlp")
        right = tokens = seconds = 0
        for start in range(0, images, digits.IMAGES_PER_LAUNCH):
            batch = slice(start, min(images, start + digits.IMAGES_PER_LAUNCH))
            with LaunchProgress(_show_progress() and engine == "model") as progress:
                if engine == "model":
                    dev.on_token, dev.on_phase = progress.token, progress.phase
                logits, result = digits.run_kernel(fn, net, test.images[batch])
            if not np.array_equal(logits.view(np.uint32), digits.reference_logits(net, test.images[batch]).view(np.uint32)):
                raise QwenGpuError("the model's logits differ from NumPy's reference (digits.reference_logits)")
            guess, labels = logits.argmax(1), test.labels[batch]
            right += int((guess == labels).sum())
            tokens += result.tokens or 0
            seconds += result.seconds
            _show_digits(test.images[batch], labels, guess)
            console.print(f"[dim]{_escape(_stats(result))}[/]")
    except QwenGpuError as e:
        fail(e)
    per_image = f", {tokens / images:,.0f} tokens and {seconds / images:.1f} s an image" if tokens else ""
    console.print(f"[bold]{right} of {images} right ({right / images:.0%})[/]{per_image}; logits identical "
                  f"to NumPy's; wall {time.perf_counter() - wall:.1f} s")


def _show_digits(images, labels, guesses) -> None:
    """The images side by side, each with its label and the model's answer under it."""
    from qwengpu import digits
    drawn = [digits.draw(im) for im in images]
    for row in zip(*drawn):
        console.print("   ".join(row), markup=False)
    console.print("   ".join((f"{g} ok" if g == l else f"{g} (is {l})").ljust(16)
                             for g, l in zip(guesses, labels)).rstrip())


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version
        try:
            v = version("qwengpu")
        except PackageNotFoundError:
            v = "unknown (not installed)"
        console.print(f"qgpu (qwengpu) {v}", markup=False)
        raise typer.Exit()


@app.callback()
def main(show_version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                           help="print the version and exit")):
    """qwengpu: run CUDA kernels on a 4-lane SIMT GPU compiled into a Qwen3.5 model."""


if __name__ == "__main__":
    app()
