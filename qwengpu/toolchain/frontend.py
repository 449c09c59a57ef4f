"""CUDA C++ -> PTX front ends: clang-19 (default) and NVRTC.

Both prepend prelude.h (qualifiers, index variables, warpSize == 4, atomics,
shuffles, votes, integer intrinsics) and then `#line 1 "<filename>"`, so
diagnostics carry the user's own file name and line numbers.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from qwengpu.errors import CompileError

PRELUDE_PATH = Path(__file__).with_name("prelude.h")
# The project's own minimal <cstdint>, <climits>, <cuda_runtime.h>, ... (the
# prelude defines what they declare); the only include directory either front end searches.
INCLUDE_DIR = Path(__file__).with_name("include")
FRONTENDS = ("clang", "nvrtc")
CLANG = "clang-19"
GPU_ARCH = "sm_75"
INSTALL_HINT = ("install it with `apt-get install -y clang-19` (or run `bash scripts/setup.sh`), "
                "or use the NVRTC front end (frontend='nvrtc')")


def compile_cuda(src: str, *, frontend: str = "clang", opt: int = 2, filename: str = "<source>",
                 defines: tuple[str, ...] = ()) -> str:
    """Compile CUDA C++ source to PTX text; raise CompileError with file:line on failure.

    `opt` (0..3) is clang's -O level; NVRTC always optimises. `defines` are
    extra NAME or NAME=VALUE macros (the cuda engine sets QWENGPU_REAL_GPU).
    """
    if frontend not in FRONTENDS:
        raise CompileError(f"unknown front end {frontend!r}; choose one of {', '.join(FRONTENDS)}")
    if not isinstance(opt, int) or not 0 <= opt <= 3:
        raise CompileError(f"optimisation level must be 0..3, got {opt!r}")
    return _compile_cached(src, frontend, opt, filename, tuple(defines))


@functools.lru_cache(maxsize=256)
def _compile_cached(src: str, frontend: str, opt: int, filename: str, defines: tuple[str, ...]) -> str:
    full = with_prelude(src, filename, defines)
    return _clang(full, opt) if frontend == "clang" else _nvrtc(full, filename)


def with_prelude(src: str, filename: str, defines: tuple[str, ...] = ()) -> str:
    """The text handed to the compiler: defines, prelude, then the user's source from line 1."""
    lines = [f"#define {d.replace('=', ' ', 1)}" for d in defines]
    quoted = filename.replace("\\", "\\\\").replace('"', '\\"')
    prelude = [f'#line 1 "{PRELUDE_PATH}"', PRELUDE_PATH.read_text()]
    return "\n".join(lines + prelude + [f'#line 1 "{quoted}"', src])


# ---------------------------------------------------------------------------
# clang-19
# ---------------------------------------------------------------------------
def clang_path() -> str | None:
    return shutil.which(CLANG) or (f"/usr/bin/{CLANG}" if os.path.exists(f"/usr/bin/{CLANG}") else None)


def clang_command(opt: int) -> list[str]:
    """Device-only PTX for sm_75, 32-bit addresses; no CUDA headers or libdevice, and
    any CUDA toolkit on the machine is ignored (--cuda-path points nowhere). Includes
    resolve only in INCLUDE_DIR (-nostdinc: no host C library headers)."""
    return [clang_path() or CLANG, "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={GPU_ARCH}",
            "-nocudainc", "-nocudalib", "--cuda-path=/nonexistent", "--target=i386-unknown-linux-gnu",
            "-nostdinc", "-isystem", str(INCLUDE_DIR),
            "-Xclang", "-target-feature", "-Xclang", "+ptx63", f"-O{opt}", "-gline-tables-only",
            "-fno-caret-diagnostics", "-fno-color-diagnostics", "-S", "-o", "-", "-"]


def _clang(full_src: str, opt: int) -> str:
    if clang_path() is None:
        raise CompileError(f"{CLANG} not found: {INSTALL_HINT}")
    proc = subprocess.run(clang_command(opt), input=full_src, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(_diagnostics(proc.stderr) or f"{CLANG} failed with exit code {proc.returncode}")
    return proc.stdout


def _diagnostics(log: str) -> str:
    """Keep the error/warning/note lines; drop the 'N errors generated' summary."""
    keep = [ln for ln in log.splitlines() if ln.strip() and "generated when compiling" not in ln]
    return "\n".join(keep)


# ---------------------------------------------------------------------------
# NVRTC (from the nvidia-cuda-nvrtc wheel, through ctypes)
# ---------------------------------------------------------------------------
NVRTC_OPTIONS = ("--gpu-architecture=compute_75", "--std=c++17", "-lineinfo", f"--include-path={INCLUDE_DIR}")


@functools.cache
def load_nvrtc() -> ctypes.CDLL:
    """Find libnvrtc.so.* under site-packages/nvidia/ and load it."""
    try:
        import nvidia
    except ImportError:
        raise CompileError("NVRTC front end needs the nvidia-cuda-nvrtc wheel: pip install nvidia-cuda-nvrtc") from None
    found = sorted(p for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "*", "lib", "libnvrtc.so*"))
                   if "builtins" not in os.path.basename(p))
    if not found:
        raise CompileError(f"no libnvrtc.so found under {list(nvidia.__path__)}; reinstall nvidia-cuda-nvrtc")
    lib = ctypes.CDLL(found[-1])
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def _nvrtc(full_src: str, filename: str) -> str:
    lib = load_nvrtc()
    prog = ctypes.c_void_p()
    _nvrtc_check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), full_src.encode(), filename.encode(),
                                             0, None, None), "nvrtcCreateProgram")
    try:
        opts = (ctypes.c_char_p * len(NVRTC_OPTIONS))(*[o.encode() for o in NVRTC_OPTIONS])
        if lib.nvrtcCompileProgram(prog, len(NVRTC_OPTIONS), opts) != 0:
            raise CompileError(nvrtc_log_to_diagnostics(_nvrtc_text(lib, prog, "ProgramLog")))
        return _nvrtc_text(lib, prog, "PTX")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _nvrtc_check(lib, status: int, what: str) -> None:
    if status != 0:
        raise CompileError(f"{what} failed: {lib.nvrtcGetErrorString(status).decode()}")


def _nvrtc_text(lib, prog, kind: str) -> str:
    """nvrtcGet{kind}Size + nvrtcGet{kind}: a NUL-terminated string."""
    size = ctypes.c_size_t()
    _nvrtc_check(lib, getattr(lib, f"nvrtcGet{kind}Size")(prog, ctypes.byref(size)), f"nvrtcGet{kind}Size")
    buf = ctypes.create_string_buffer(size.value)
    _nvrtc_check(lib, getattr(lib, f"nvrtcGet{kind}")(prog, buf), f"nvrtcGet{kind}")
    return buf.value.decode(errors="replace")


_NVRTC_LOCATION = re.compile(r"^(.*)\((\d+)\): ")


def nvrtc_log_to_diagnostics(log: str) -> str:
    """NVRTC writes `file(12): error: ...`; rewrite to the usual `file:12: error: ...`."""
    lines = [_NVRTC_LOCATION.sub(r"\1:\2: ", ln) for ln in log.splitlines()]
    keep = [ln for ln in lines if ln.strip() and "detected in the compilation of" not in ln]
    return "\n".join(keep) or "NVRTC compilation failed"
