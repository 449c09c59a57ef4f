"""The Python API, in the style of CuPy's RawModule / PyCUDA:

    dev = Device()                                  # engine="interp", frontend="clang", opt=2
    mod = dev.compile(src, filename="dot.cu")       # CUDA -> PTX (CompileError with file:line)
    dot = mod.get_function("dot")                   # PTX -> machine program (limits checked here)
    res = dot(grid=1, block=4, args=[a, b, out, 3])  # arrays are updated in place
    res.passes, res.instructions, res.seconds

Engines: "interp" (the reference interpreter), "cuda" (the same source on a
real NVIDIA GPU through CuPy), "model" (the Qwen3.5 model; not built yet).
"""
from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from qwengpu import interp, isa
from qwengpu.errors import CompileError, QwenGpuError
from qwengpu.launch import Launch
from qwengpu.toolchain.frontend import FRONTENDS, compile_cuda, with_prelude
from qwengpu.toolchain.lower import lower, plain_name
from qwengpu.toolchain.ptx import parse_ptx

ENGINES = ("interp", "cuda", "model")


@dataclass
class LaunchResult:
    """What a launch cost. `instructions` (warp-instructions) and `passes`
    (machine blocks executed) are None on the cuda engine; `tokens` is set
    by the model engine only; `trace` holds the interpreter's steps when asked."""
    engine: str
    seconds: float
    instructions: int | None = None
    passes: int | None = None
    tokens: int | None = None
    trace: list | None = None


class Device:
    def __init__(self, engine: str = "interp", frontend: str = "clang", opt: int = 2):
        if engine not in ENGINES:
            raise QwenGpuError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        if frontend not in FRONTENDS:
            raise QwenGpuError(f"unknown front end {frontend!r}; choose one of {', '.join(FRONTENDS)}")
        self.engine, self.frontend, self.opt = engine, frontend, opt

    def compile(self, src: str, filename: str = "<source>") -> "Module":
        ptx = compile_cuda(src, frontend=self.frontend, opt=self.opt, filename=filename)
        return Module(self, src, ptx, filename)

    def __repr__(self):
        return f"Device(engine={self.engine!r}, frontend={self.frontend!r}, opt={self.opt})"


class Module:
    """A compiled source: `ptx` is the front end's output."""

    def __init__(self, device: Device, src: str, ptx: str, filename: str):
        self.device, self.src, self.ptx, self.filename = device, src, ptx, filename
        self._functions: dict[str, Function] = {}

    @functools.cached_property
    def parsed(self):
        return parse_ptx(self.ptx)

    @property
    def kernel_names(self) -> list[str]:
        """The module's __global__ functions, by plain (unmangled) name."""
        return sorted(plain_name(n) for n in self.parsed.kernels)

    def get_function(self, name: str) -> "Function":
        """Lower kernel `name` to a machine program (MachineLimitError / UnsupportedError propagate)."""
        if name not in self._functions:
            try:
                program = lower(self.parsed, name)
            except CompileError as e:
                if ".local" in self.ptx:   # typically -O0: variables live on a stack
                    raise type(e)(f"{e} (this PTX keeps variables in .local stack memory, which the "
                                  f"machine lacks; compile with -O1 or higher)") from e
                raise
            self._functions[name] = Function(self, name, program)
        return self._functions[name]


class Function:
    """A lowered kernel; `program` is its isa.Program (see program.listing())."""

    def __init__(self, module: Module, name: str, program: isa.Program):
        self.module, self.name, self.program = module, name, program
        ptx_names = [p.name for p in program.params]
        self.arg_names = source_param_names(module.src, name, len(ptx_names)) or ptx_names

    def __call__(self, grid=1, block=1, args: Sequence[Any] = (), trace: bool = False) -> LaunchResult:
        launch = Launch.build(self.program, grid, block, list(args), names=self.arg_names)
        return ENGINE_RUNNERS[self.module.device.engine](self, launch, trace)

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
# Engines: each runs a checked Launch and writes the arrays back.
# ---------------------------------------------------------------------------
def _run_interp(fn: Function, launch: Launch, trace: bool) -> LaunchResult:
    ex = interp.run(fn.program, launch.grid, launch.block, launch.params, launch.memory, trace=trace)
    launch.copy_back()
    return LaunchResult("interp", ex.seconds, ex.instructions, ex.passes, None, ex.steps)


def _run_model(fn: Function, launch: Launch, trace: bool) -> LaunchResult:
    raise QwenGpuError("the in-model engine is not built yet; use engine='interp' (or 'cuda' on an NVIDIA GPU)")


def _run_cuda(fn: Function, launch: Launch, trace: bool) -> LaunchResult:
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
    try:
        return cp.RawModule(code=code, options=("--std=c++17",)).get_function(name)
    except Exception:
        # a C++ (mangled) kernel: let NVRTC resolve the name
        return cp.RawModule(code=code, options=("--std=c++17",), name_expressions=[name]).get_function(name)


ENGINE_RUNNERS: dict[str, Callable[[Function, Launch, bool], LaunchResult]] = {
    "interp": _run_interp, "cuda": _run_cuda, "model": _run_model}


def compile_file(path, *, engine: str = "interp", frontend: str = "clang", opt: int = 2) -> Module:
    """Compile a .cu file on a new Device."""
    p = Path(path)
    return Device(engine, frontend, opt).compile(p.read_text(), filename=p.name)
