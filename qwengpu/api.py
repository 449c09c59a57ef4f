"""The Python API, in the style of CuPy's RawModule / PyCUDA:

    dev = Device()                                  # engine="interp", frontend="clang", opt=2
    mod = dev.compile(src, filename="dot.cu")       # CUDA -> PTX (CompileError with file:line)
    dot = mod.get_function("dot")                   # PTX -> machine program (limits checked here)
    res = dot(grid=1, block=4, args=[a, b, out, 3])  # arrays are updated in place
    res.passes, res.instructions, res.seconds

Engines: "interp" (the reference interpreter), "cuda" (the same source on a
real NVIDIA GPU through CuPy), "model" (the merged Qwen3.5 model generates the
launch token by token; docs/protocol.md):

    dev = Device("model", model="build/standin-merged", dtype="bfloat16", check="replay")
    res.tokens, res.passes, res.instructions

and the same merged model on engines that return only tokens, the results decoded from the
copy-out the model writes at the end (docs/engines.md): "vllm" (a vLLM of its own venv, or an
OpenAI-compatible vLLM server by url) and "llama.cpp" (a GGUF export):

    Device("vllm", model="build/standin-merged")
    Device("vllm", url="http://127.0.0.1:8000")
    Device("llama.cpp", model="build/engines/standin-bf16.gguf")
"""
from __future__ import annotations

import functools
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from qwengpu import interp, isa
from qwengpu.dtypes import check_dtype
from qwengpu.errors import ExecutionError, QwenGpuError, UnsupportedError
from qwengpu.launch import Launch, as_dim3
from qwengpu.driver.protocol import CHECKS
from qwengpu.printf import device_output
from qwengpu.toolchain.frontend import FRONTENDS, INCLUDE_DIR, NVRTC_FP_OPTIONS, compile_cuda, with_prelude
from qwengpu.toolchain.lint import issue_warnings
from qwengpu.toolchain.lower import MODEL_EXPANSIONS, lower, plain_name
from qwengpu.toolchain.ptx import parse_ptx

DEFAULT_MAX_PASSES = interp.DEFAULT_MAX_PASSES


# The model engine's default generation limit: a runaway kernel stops after about 20 s of
# decoding at the fast path's ~1,000 tokens/s (`qgpu run` of an infinite loop: about 22 s in
# all, 2-core machine, 2026-12-05), and all 83 suite kernels fit (the longest, isqrt_bsearch,
# needs 14,827 tokens, int64_div 5,134; raise it with max_tokens / --max-tokens). The limit
# is a constant on purpose: the host must not run the kernel itself to size it.
DEFAULT_MAX_TOKENS = 20_000


@dataclass
class LaunchResult:
    """What a launch cost. `instructions` (warp-instructions) and `blocks` (machine blocks
    executed, one per warp scheduling turn) are counted the same on both engines; `passes` is
    the engine's own count: the interpreter's machine blocks (= blocks), the model engine's EXEC
    tokens (one per instruction or pair of instructions, plus one per block whose terminator
    cannot be folded into its last instruction's pass: qwengpu.machine.encoding). All three are None on the
    cuda engine. `tokens` (generated tokens, one forward pass of the model each) is set by the
    model engine only, as are its times: `load_seconds` (loading the model during this launch,
    0 when it was loaded), `prefill_seconds` and `decode_seconds` (`seconds` is their sum
    without the load). `trace` holds the interpreter's steps (model engine: the generated
    tokens) when asked."""
    engine: str
    seconds: float
    instructions: int | None = None
    passes: int | None = None
    tokens: int | None = None
    trace: list | None = None
    output: list[str] = field(default_factory=list)   # device printf output, one string per call
    blocks: int | None = None
    load_seconds: float | None = None
    prefill_seconds: float | None = None
    decode_seconds: float | None = None


class Device:
    """The model engine's options: `model` a merged checkpoint directory (None: the
    stand-in merged model, built on first use), `dtype` float32 or bfloat16, `check`
    None or "replay" (every generated token against the interpreter's stream),
    `max_tokens` the generation limit (None: DEFAULT_MAX_TOKENS), `on_token` a callback for
    each generated token, `on_phase` a callback with "load" (the model starts loading),
    "prefill" and "decode" (the first generated token),
    `fast` run the circuit layers on the exact fast path (qwengpu.fast; False: the
    stock transformers forward of the whole model), `device` the torch device of the stock
    path: cpu, cuda (cuda:N) or mps; None: the best available (resolve_device). The fast path
    is CPU code and always runs on the CPU. The model loads on the first launch.
    `print_output`: write a launch's device printf output to stdout when it ends (it is in
    `LaunchResult.output` either way). `max_passes`: the interpreter's limit on machine blocks.
    Engines vllm and llama.cpp take `model` (vllm: a merged checkpoint directory, None: the
    stand-in; llama.cpp: a GGUF file from `qgpu export gguf`), `check` and `max_tokens`; `url`
    (vllm only): an OpenAI-compatible vLLM server to send the launches to instead. `micro_code`:
    lower as for the model engine (its missing ops micro-coded, toolchain/microcode.py) on any
    engine, e.g. to run the model engine's programs on the interpreter."""

    def __init__(self, engine: str = "interp", frontend: str = "clang", opt: int = 2, *,
                 model: str | Path | None = None, dtype: str = "float32", check: str | None = None,
                 max_tokens: int | None = None, on_token: Callable | None = None, fast: bool = True,
                 device: str | None = None, print_output: bool = True, max_passes: int = DEFAULT_MAX_PASSES,
                 on_phase: Callable[[str], None] | None = None, url: str | None = None,
                 micro_code: bool = False):
        if engine not in ENGINES:
            raise QwenGpuError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        if frontend not in FRONTENDS:
            raise QwenGpuError(f"unknown front end {frontend!r}; choose one of {', '.join(FRONTENDS)}")
        check_dtype(dtype)
        if check not in CHECKS:
            raise QwenGpuError(f"unknown check {check!r}; choose replay or none")
        if max_tokens is not None and max_tokens < 1:
            raise QwenGpuError(f"max_tokens must be at least 1, got {max_tokens}")
        if max_passes < 1:
            raise QwenGpuError(f"max_passes must be at least 1, got {max_passes}")
        if url is not None and "url" not in ENGINES[engine].options:
            raise QwenGpuError(f"url names a vLLM server: it applies to engine='vllm', not {engine!r}")
        if engine == "llama.cpp" and model is None:
            raise QwenGpuError("engine='llama.cpp' needs a GGUF file: model=FILE.gguf (qgpu: --model FILE.gguf); "
                               "make one with: qgpu export gguf --model DIR --out FILE.gguf")
        self.url, self.micro_code = url, micro_code
        self.max_passes, self.on_phase, self.load_seconds = max_passes, on_phase, 0.0
        self.engine, self.frontend, self.opt = engine, frontend, opt
        self.model_path, self.dtype, self.check, self.max_tokens = model, dtype, check, max_tokens
        self.on_token, self.fast, self.print_output = on_token, fast, print_output
        self.torch_device = resolve_device(device) if engine == "model" else check_device_name(device)
        self._engine = None     # (token engine, its GPU vocabulary) once a vllm/llama.cpp launch started it
        self._loaded = None     # (model, machine) once the model engine has loaded them

    def model_and_machine(self):
        """The loaded merged model and its machine's readout (loaded on the first call)."""
        if self._loaded is None:
            if self.on_phase:
                self.on_phase("load")
            start = time.perf_counter()
            from qwengpu.model.merge import default_merged_model
            path = self.model_path if self.model_path is not None else default_merged_model()
            self._loaded = _load_model(path, self.dtype, self.fast, self.torch_device)
            self.load_seconds = time.perf_counter() - start      # seconds the last load took
        return self._loaded

    def token_engine(self):
        """(the vllm or llama.cpp engine, the GPU vocabulary at its token ids), started on the
        first call: qwengpu.engines.connect.open_engine."""
        if self._engine is None:
            from qwengpu.engines.connect import open_engine
            if self.on_phase:
                self.on_phase("load")
            start = time.perf_counter()
            self._engine = open_engine(self.engine, self.model_path, self.url)
            self.load_seconds = time.perf_counter() - start
        return self._engine

    def run_batch(self, calls: Sequence[Call], *, trace: bool = False, max_batch: int = 1,
                  max_tokens: int | None = None, on_token: Callable[[int, object], None] | None = None,
                  on_done: Callable[[int, object], None] | None = None) -> list:
        """Run launches, each a (Function, Launch) of this Device: the one route every launch
        takes (a call of a Function, the suite, bench, chat, the engines' reference checks). The
        result per call, in order: a LaunchResult (the arrays written back, the device printf
        output read) or the QwenGpuError that ended that launch alone. max_batch: the model
        engine's fast path steps up to that many launches in lockstep (vllm and llama.cpp take
        them all in one request); max_tokens: each generated launch's token limit (default: the
        Device's); on_token(index, token) for each token the model generates (default: the
        Device's on_token); on_done(index, result) as each launch ends."""
        calls, results = list(calls), [None] * len(calls)
        if on_token is None and self.on_token is not None:
            on_token = lambda index, token: self.on_token(token)    # noqa: E731

        def done(index: int, result) -> None:
            results[index] = _with_output(*calls[index], result)
            if on_done:
                on_done(index, results[index])

        max_tokens = max_tokens or self.max_tokens or DEFAULT_MAX_TOKENS
        ENGINES[self.engine].run(self, calls, trace, max_batch, max_tokens, on_token, done)
        return results

    def compile(self, src: str, filename: str = "<source>") -> "Module":
        ptx = compile_cuda(src, frontend=self.frontend, opt=self.opt, filename=filename)
        return Module(self, src, ptx, filename)

    def __repr__(self):
        model = (f", model={self.model_path!r}, dtype={self.dtype!r}, check={self.check!r}, fast={self.fast}, "
                 f"device={self.torch_device!r}" if self.engine == "model"
                 else f", model={self.model_path!r}, url={self.url!r}, check={self.check!r}"
                 if self.engine in TOKEN_ENGINES else "")
        return f"Device(engine={self.engine!r}, frontend={self.frontend!r}, opt={self.opt}{model})"


TORCH_DEVICES = ("cpu", "cuda", "mps")


_LOADED: dict = {}     # the last model the model engine loaded, by configuration


def _load_model(path: Path, dtype: str, fast: bool, torch_device: str):
    """(the model engine's model, its machine's readout). The last one loaded is kept, so Devices of one
    configuration share it (a load takes seconds and gigabytes; a launch's state is its own)."""
    key = (path, dtype, fast, torch_device)
    if key not in _LOADED:
        _LOADED.clear()                 # one kept at a time: let the last go before loading another
        _LOADED[key] = _load_model_uncached(*key)
    return _LOADED[key]


def _load_model_uncached(path: Path, dtype: str, fast: bool, torch_device: str):
    """The fast path reads only the tensors it needs from the checkpoint's safetensors files
    (FastModel.from_checkpoint, on the CPU) and never builds the stock model; fast=False loads
    the stock transformers model on `torch_device`. What the host reads the results with (the
    machine's readout) comes from config.json alone."""
    from qwengpu.driver import runtime
    if fast:
        from qwengpu.fast import FastModel
        config = runtime.load_config(path)
        model = FastModel.from_checkpoint(path, dtype)
    else:
        if torch_device.startswith("cuda"):
            _exact_cuda_matmuls()
        model, _ = runtime.load_model(path, dtype, torch_device)
        config = model
    return model, runtime.checkpoint_readout(runtime.host_config(config), path)


def _exact_cuda_matmuls() -> None:
    """No TF32 on CUDA: it rounds fp32 matmul and conv operands to 10 mantissa bits, and the
    circuit's arithmetic is exact only in true fp32 / bf16."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def check_device_name(device: str | None) -> str | None:
    """`device` if it names a torch device kind the model engine knows (cpu, cuda, cuda:N, mps)."""
    if device is not None and device.split(":")[0] not in TORCH_DEVICES:
        raise QwenGpuError(f"unknown device {device!r}; choose one of {', '.join(TORCH_DEVICES)}")
    return device


def available_devices() -> list[str]:
    """The torch devices usable here, best first (cpu always last)."""
    import torch
    found = ["cuda"] if torch.cuda.is_available() else []
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found + ["cpu"]


def resolve_device(device: str | None = None) -> str:
    """The torch device for the model engine: `device` when it is available here, else a
    QwenGpuError naming it and what is available; None picks the best available (cuda, then
    mps, then cpu). What `qgpu --device` passes."""
    check_device_name(device)
    available = available_devices()
    if device is None:
        return available[0]
    kind, _, index = device.partition(":")
    if kind not in available:
        raise QwenGpuError(f"device {device!r} is not available here; available: {', '.join(available)}")
    if kind == "cuda" and index:
        import torch
        count = torch.cuda.device_count()
        if not index.isdigit() or int(index) >= count:
            raise QwenGpuError(f"device {device!r} is not available here: {count} CUDA device(s) "
                               f"(cuda:0..cuda:{count - 1})")
    return device


class Module:
    """A compiled source: `ptx` is the front end's output."""

    def __init__(self, device: Device, src: str, ptx: str, filename: str):
        self.device, self.src, self.ptx, self.filename = device, src, ptx, filename
        self._functions: dict[str, Function] = {}

    @functools.cached_property
    def parsed(self):
        return parse_ptx(self.ptx, filename=self.filename, cuda=self.src)

    @property
    def kernel_names(self) -> list[str]:
        """The module's __global__ functions, by plain (unmangled) name."""
        return sorted(plain_name(n) for n in self.parsed.kernels)

    def kernel(self, name: str | None = None, *, choose: str = "choose one with --kernel",
               source: str | None = None) -> str:
        """The kernel to launch: `name` when given (get_function names the kernels when it is
        missing), else the module's only kernel, or a QwenGpuError when it has none or several.
        `choose` ends the several-kernels message (how the caller names one); `source` is what
        the messages call the source (default: the module's filename)."""
        if name:
            return name
        names, source = self.kernel_names, source or self.filename
        if not names:
            raise QwenGpuError(f"{source} defines no __global__ kernel: mark the function to launch "
                               f"__global__ (e.g. extern \"C\" __global__ void k(int *out) {{ ... }})")
        if len(names) != 1:
            raise QwenGpuError(f"{source} has {len(names)} kernels ({', '.join(names)}); {choose}")
        return names[0]

    def get_function(self, name: str) -> "Function":
        """Lower kernel `name` to a machine program (MachineLimitError / UnsupportedError propagate).
        Compile-time warnings (program.warnings, `FILE:LINE: warning: ...`) are issued once, as
        Python warnings of category qwengpu.errors.QwenGpuWarning."""
        if name not in self._functions:
            # the model has no divider, high multiply, float divider, square root or float atomic:
            # those ops are micro-coded for it (and for any engine with micro_code: the model
            # engine's programs, say on the interpreter)
            micro = ENGINES[self.device.engine].generates or self.device.micro_code
            expand = MODEL_EXPANSIONS if micro else frozenset()
            program = lower(self.parsed, name, expand=expand)
            self._functions[name] = Function(self, name, program, lambda block: lower(self.parsed, name, expand=expand,
                                                                                       block=block))
            issue_warnings(program.warnings)
        return self._functions[name]


Call = tuple["Function", Launch]       # a launch of a kernel, for Device.run_batch


class Function:
    """A lowered kernel; `program` is its isa.Program (see program.listing())."""

    def __init__(self, module: Module, name: str, program: isa.Program,
                 lower_for: Callable[[tuple[int, int, int]], isa.Program] | None = None):
        self.module, self.name, self.program = module, name, program
        self.lower_for = lower_for              # a block's program, for blocks the machine runs in tiles
        self._tiled: dict[tuple[int, int, int], isa.Program] = {}
        ptx_names = [p.name for p in program.params]
        self.arg_names = source_param_names(module.src, name, len(ptx_names)) or ptx_names

    def program_for(self, block) -> isa.Program:
        """The program that runs blocks of these dims: `program`, or for a block of more threads
        than the machine runs at once, one lowered for it (toolchain/threads.py), once."""
        dims = as_dim3("block", block)
        if self.lower_for is None or isa.block_tile(dims) is None:
            return self.program
        if dims not in self._tiled:
            self._tiled[dims] = self.lower_for(dims)
        return self._tiled[dims]

    def launch(self, grid=1, block=1, args: Sequence[Any] = ()) -> Launch:
        """The checked launch of this kernel with these arguments (arrays are laid out, not copied)."""
        return Launch.build(self.program_for(block), grid, block, list(args), names=self.arg_names)

    def __call__(self, grid=1, block=1, args: Sequence[Any] = (), trace: bool = False) -> LaunchResult:
        device = self.module.device
        [result] = device.run_batch([(self, self.launch(grid, block, args))], trace=trace)
        if isinstance(result, Exception):
            raise result
        if result.output and device.print_output:
            sys.stdout.write("".join(result.output))
            sys.stdout.flush()
        return result

    def __repr__(self):
        return f"<Function {self.name}: {len(self.program.blocks)} blocks, {self.program.regs_used} registers>"


_TYPE_WORDS = {"const", "volatile", "unsigned", "signed", "int", "char", "short", "long", "bool",
               "float", "double", "__restrict__", "__restrict", "struct"}


def source_param_names(src: str, kernel: str, count: int) -> list[str] | None:
    """The kernel's parameter names as written in the CUDA source (PTX only has
    KERNEL_param_N), for messages and printing; None when they can't be found."""
    m = re.search(rf"__global__[^;{{]*?\b{re.escape(kernel)}\s*\(([^()]*)\)", src)
    if not m:
        return None
    params = [p for p in m[1].split(",") if p.strip() and p.strip() != "void"]
    names = []
    for i, p in enumerate(params):
        words = re.findall(r"[A-Za-z_]\w*", p.split("=")[0])
        names.append(words[-1] if words and words[-1] not in _TYPE_WORDS else f"arg{i}")
    return names if len(names) == count else None


# ---------------------------------------------------------------------------
# Engines: each runs a batch of checked launches and calls done(index, result) with each one's
# LaunchResult or the error that ended it; Device.run_batch writes the arrays back and reads printf.
# ---------------------------------------------------------------------------
def _run_interp(dev: Device, calls: list[Call], trace: bool, max_batch: int, max_tokens: int, on_token, done) -> None:
    def run(fn: Function, launch: Launch) -> LaunchResult:
        ex = interp.run_launch(launch, trace=trace, max_passes=dev.max_passes)
        return LaunchResult("interp", ex.seconds, ex.instructions, ex.passes, None, ex.steps, blocks=ex.passes)
    _one_by_one(run, calls, done)


def _one_by_one(run, calls: list[Call], done) -> None:
    for i, (fn, launch) in enumerate(calls):
        try:
            result = run(fn, launch)
        except QwenGpuError as e:
            result = e
        done(i, result)


def check_model_ops(program: isa.Program) -> None:
    """UnsupportedError naming every op and terminator of `program` the model cannot run yet."""
    from qwengpu.machine.build import MODEL_OPS
    names = {getattr(op, "name", op) for op in MODEL_OPS}
    used = ({ins.op.name for b in program.blocks for ins in b.instrs} | {b.term.kind.name for b in program.blocks}
            | {f"ATOM.{ins.mod[1].name}" for b in program.blocks for ins in b.instrs if ins.op is isa.Op.ATOM})
    missing = sorted(used - names)
    if missing:
        raise UnsupportedError(f"kernel {program.name} uses {', '.join(missing)}, which the model engine "
                               f"does not support yet; use engine='interp'")


def _runnable_on_model(calls: list[Call], done) -> list[int]:
    """The indices of the launches the model can run; done(i, error) for the others."""
    runnable = []
    for i, (_, launch) in enumerate(calls):
        try:
            check_model_ops(launch.program)
            runnable.append(i)
        except QwenGpuError as e:
            done(i, e)
    return runnable


def _run_model(dev: Device, calls: list[Call], trace: bool, max_batch: int, max_tokens: int, on_token, done) -> None:
    """The launches on the merged model: one at a time from its prompt on a decoder, or up to
    max_batch in lockstep on the fast path (qwengpu.driver.runtime)."""
    from qwengpu.driver.runtime import launch_many
    runnable = _runnable_on_model(calls, done)          # before loading anything
    if not runnable:
        return
    loaded = dev._loaded is not None
    model, machine = dev.model_and_machine()
    load_seconds = 0.0 if loaded else dev.load_seconds
    if dev.on_phase:
        dev.on_phase("prefill")
        on_token = _before_first_token(lambda: dev.on_phase("decode"), on_token)

    def finished(k: int, run) -> None:
        done(runnable[k], run if isinstance(run, Exception) else LaunchResult(
            "model", run.seconds, run.instructions, run.passes, run.tokens, run.stream if trace else None,
            blocks=run.blocks, load_seconds=load_seconds, prefill_seconds=run.prefill_seconds,
            decode_seconds=run.seconds - run.prefill_seconds))

    launch_many(model, machine, [calls[i][1] for i in runnable], max_tokens=max_tokens,
                check=dev.check, max_batch=max_batch, on_done=finished,
                on_token=(lambda k, t: on_token(runnable[k], t)) if on_token else None)


def _run_token_engine(dev: Device, calls: list[Call], trace: bool, max_batch: int, max_tokens: int, on_token, done) -> None:
    """The launches on vllm or llama.cpp, in one request: the prompts' ids in, the generated ids
    out, the results from the copy-out (qwengpu.driver.runtime.launch_on_engine)."""
    from qwengpu.driver.runtime import launch_on_engine
    runnable = _runnable_on_model(calls, done)
    if not runnable:
        return
    loaded = dev._engine is not None
    engine, vocab = dev.token_engine()
    if dev.on_phase:
        dev.on_phase("engine")
    runs = launch_on_engine(engine, vocab, [calls[i][1] for i in runnable],
                            max_tokens=max_tokens, check=dev.check)
    for i, run in zip(runnable, runs):
        if isinstance(run, Exception):
            done(i, run)
            continue
        for token in run.stream if on_token else ():
            on_token(i, token)
        done(i, LaunchResult(dev.engine, run.seconds, run.instructions, run.passes, run.tokens,
                             run.stream if trace else None, blocks=run.blocks,
                             load_seconds=0.0 if loaded else dev.load_seconds))


def _with_output(fn: Function, launch: Launch, result):
    """A launch's arrays written back and its printf output read (on a GPU, CUDA's own printf has
    printed); a failed device-side assertion is the launch's error."""
    if isinstance(result, Exception) or result.engine == "cuda":
        return result
    try:
        launch.copy_back()
    except QwenGpuError as e:
        return e
    result.output, failed = device_output(fn.program.printf_buffer, launch.memory)
    if failed:
        return ExecutionError(f"device-side assertion failed ({len(failed)} thread"
                              f"{'s' if len(failed) > 1 else ''}): {failed[0]}")
    return result


def _before_first_token(hook: Callable[[], None], user: Callable | None) -> Callable:
    """A token callback that calls hook() before the first token, then user(index, token) for each."""
    first = [True]

    def on_token(index, token):
        if first[0]:
            first[0] = False
            hook()
        if user:
            user(index, token)
    return on_token


def _run_cuda(dev: Device, calls: list[Call], trace: bool, max_batch: int, max_tokens: int, on_token, done) -> None:
    _one_by_one(_run_cuda_one, calls, done)


def _run_cuda_one(fn: Function, launch: Launch) -> LaunchResult:
    """The same CUDA source on a real GPU through CuPy (NVRTC), with the prelude's
    QWENGPU_REAL_GPU build so warps look 4 lanes wide. Arrays go in and come
    back as device copies; __device__ variables start from their initialisers."""
    cp = _cupy()
    kernel = _cuda_kernel(fn.module.src, fn.module.filename, fn.name)
    device_args, copies = [], []
    arrays = {slot.index: slot.array for slot in launch.arrays}
    for i, prm in enumerate(fn.program.params):
        if i in arrays:
            copies.append((arrays[i], cp.asarray(arrays[i])))
            device_args.append(copies[-1][1])
        else:
            device_args.append(np.uint32(launch.params[prm.word]))  # int and unsigned alike: 32 bits
    start = time.perf_counter()
    kernel(launch.grid, launch.block, tuple(device_args))
    cp.cuda.runtime.deviceSynchronize()
    seconds = time.perf_counter() - start
    for host, dev in copies:
        if host.flags.writeable:
            host[:] = cp.asnumpy(dev)
    return LaunchResult("cuda", seconds)


def _cupy():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as e:  # ImportError, CUDA driver errors
        raise QwenGpuError(f"the cuda engine needs CuPy and an NVIDIA GPU ({type(e).__name__}: {e}); "
                           f"use engine='interp'") from None
    return cupy


@functools.lru_cache(maxsize=64)
def _cuda_kernel(src: str, filename: str, name: str):
    cp = _cupy()
    code = with_prelude(src, filename, ("QWENGPU_REAL_GPU",))
    # the project's <cstdint> etc., and float code as written (no contraction, no flush to zero),
    # so the GPU computes what the interpreter does
    options = ("--std=c++17", f"--include-path={INCLUDE_DIR}", *NVRTC_FP_OPTIONS)
    try:
        return cp.RawModule(code=code, options=options).get_function(name)
    except Exception:
        # a C++ (mangled) kernel: let NVRTC resolve the name
        return cp.RawModule(code=code, options=options, name_expressions=[name]).get_function(name)


@dataclass(frozen=True)
class Engine:
    """An engine a Device runs launches on: `run(device, calls, trace, max_batch, max_tokens,
    on_token, done)`
    calls done(index, result) with a LaunchResult or the QwenGpuError that ended it for each
    (Function, Launch) call; `generates`:
    the merged model writes its launches as tokens; `tokens_only`: it returns only those
    tokens, so the results come from the copy-out; `options`: the Device options it reads."""
    name: str
    run: Callable
    generates: bool = False
    tokens_only: bool = False
    options: frozenset[str] = frozenset()


GENERATED = frozenset({"model", "check", "max_tokens", "on_token", "trace", "max_batch"})   # token engines' options
ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("interp", _run_interp, options=frozenset({"max_passes", "trace"})),
    Engine("cuda", _run_cuda),
    Engine("model", _run_model, generates=True, options=GENERATED | {"dtype", "fast", "device"}),
    Engine("vllm", _run_token_engine, generates=True, tokens_only=True, options=GENERATED | {"url"}),
    Engine("llama.cpp", _run_token_engine, generates=True, tokens_only=True, options=GENERATED),
)}
TOKEN_ENGINES = tuple(name for name, e in ENGINES.items() if e.tokens_only)


def compile_file(path, *, engine: str = "interp", frontend: str = "clang", opt: int = 2, **model_options) -> Module:
    """Compile a .cu file on a new Device (model_options: see Device)."""
    p = Path(path)
    return Device(engine, frontend, opt, **model_options).compile(p.read_text(), filename=p.name)
