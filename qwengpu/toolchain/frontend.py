"""CUDA C++ -> PTX front ends: clang-19 (default) and NVRTC.

Both prepend prelude.h (qualifiers, index variables, warpSize == 4, atomics,
shuffles, votes, integer intrinsics, the float math library and intrinsics) and
then `#line 1 "<filename>"`, so diagnostics carry the user's own file name and
line numbers.

Floating point is compiled as written (docs/architecture.md, "Floating point"):
no contraction of a*b+c into an fma (clang -ffp-contract=off, NVRTC --fmad=false),
so every add/sub/mul carries .rn and an fma appears only where the source says
fmaf/__fmaf_rn; subnormals are kept (no .ftz); division and sqrt are correctly
rounded. clang links NVIDIA's libdevice (the nvidia-nvvm wheel) for the math
functions; NVRTC has them built in.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import tempfile
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
# Float code as written, the same on both front ends: no a*b+c contracted into an fma
# (each + - * is add/sub/mul.rn), subnormals kept (no .ftz), IEEE division and sqrt,
# no approximate transcendentals unless the source calls __expf & co. The defaults of
# either compiler contract (clang: -ffp-contract=fast for CUDA; NVRTC: --fmad=true) and
# leave uncontracted + - * without a rounding modifier, which ptxas may then fuse.
CLANG_FP_FLAGS = ("-ffp-contract=off", "-fno-gpu-flush-denormals-to-zero", "-fno-gpu-approx-transcendentals")
NVRTC_FP_OPTIONS = ("--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true")
# NVIDIA's libdevice (the CUDA math library as LLVM bitcode) for clang: in the PyPI wheel
# nvidia-nvvm, e.g. nvidia/cu13/nvvm/libdevice/libdevice.10.bc.
LIBDEVICE_PACKAGE = "nvidia-nvvm"
LIBDEVICE_HINT = (f"install the {LIBDEVICE_PACKAGE} wheel (`pip install {LIBDEVICE_PACKAGE}`, a dependency of "
                  "qwengpu), or use the NVRTC front end (frontend='nvrtc'), which has the math library built in")


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


def clang_command(opt: int, libdevice: Path | None = None) -> list[str]:
    """Device-only PTX for sm_75, 32-bit addresses; no CUDA headers, and any CUDA
    toolkit on the machine is ignored (--cuda-path points nowhere). Includes resolve
    only in INCLUDE_DIR (-nostdinc: no host C library headers). Float flags:
    CLANG_FP_FLAGS. `libdevice`: the bitcode linked in (-mlink-builtin-bitcode: only
    the __nv_* functions the kernel calls are kept, internalized and inlined)."""
    link = ["-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(libdevice)] if libdevice else []
    return [clang_path() or CLANG, "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={GPU_ARCH}",
            "-nocudainc", "-nocudalib", "--cuda-path=/nonexistent", "--target=i386-unknown-linux-gnu",
            "-nostdinc", "-isystem", str(INCLUDE_DIR), *CLANG_FP_FLAGS, *link,
            "-Xclang", "-target-feature", "-Xclang", "+ptx63", f"-O{opt}", "-gline-tables-only",
            "-fno-caret-diagnostics", "-fno-color-diagnostics", "-S", "-o", "-", "-"]


@functools.cache
def libdevice_path() -> Path | None:
    """libdevice.*.bc from the installed nvidia-nvvm wheel (its file list first, then
    a search of the nvidia namespace package), or None when it is not installed."""
    try:
        files = importlib.metadata.files(LIBDEVICE_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    found = sorted(Path(f.locate()) for f in files if re.fullmatch(r"libdevice(\.\d+)?\.bc", f.name))
    if not found:
        try:
            import nvidia
            roots = list(nvidia.__path__)
        except ImportError:
            roots = []
        found = sorted(Path(p) for d in roots
                       for p in glob.glob(os.path.join(d, "**", "libdevice*.bc"), recursive=True))
    found = [p for p in found if p.is_file()]
    return found[-1] if found else None


# libdevice asks __nvvm_reflect("__CUDA_PREC_SQRT") whether sqrtf, hypotf, norm3df,
# norm4df, normf and jnf use sqrt.rn or sqrt.approx. NVRTC answers 1 (--prec-sqrt=true);
# clang-19's NVVMReflect knows only __CUDA_FTZ and __CUDA_ARCH and answers 0. So clang
# links a copy in which that question is answered 1, made once (with clang itself) and
# kept in build/libdevice/ (or the temporary folder where that is not writable).
LIBDEVICE_CACHE = Path(__file__).resolve().parents[2] / "build" / "libdevice"
_PREC_SQRT_STRING = re.compile(r'^(@[\w.$]+) = [^\n]*c"__CUDA_PREC_SQRT\\00"', re.M)


@functools.cache
def clang_libdevice() -> tuple[Path | None, str]:
    """The libdevice clang links, libdevice_path() with __CUDA_PREC_SQRT = 1: (path, "")
    or (None, why there is none)."""
    original = libdevice_path()
    if original is None:
        return None, "libdevice is not installed"
    key = hashlib.sha256(original.read_bytes() + CLANG.encode()).hexdigest()[:16]
    name = f"{original.stem}.prec-sqrt.{key}.bc"
    errors = []
    for folder in (LIBDEVICE_CACHE, Path(tempfile.gettempdir()) / "qwengpu-libdevice"):
        target = folder / name
        if target.is_file():
            return target, ""
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _write_prec_sqrt_libdevice(original, target)
            return target, ""
        except (OSError, CompileError) as e:
            errors.append(f"{folder}: {e}")
    return None, f"libdevice ({original}) could not be prepared for clang: " + "; ".join(errors)


def _write_prec_sqrt_libdevice(original: Path, target: Path) -> None:
    """Disassemble with clang, replace each __nvvm_reflect("__CUDA_PREC_SQRT") by 1,
    assemble again; written to a temporary name first, so concurrent compiles are safe."""
    ir = ["-x", "ir", "--target=nvptx-nvidia-cuda", "-Xclang", "-disable-llvm-passes", "-O0", "-Wno-override-module"]
    text = _run([clang_path() or CLANG, *ir, "-S", "-emit-llvm", str(original), "-o", "-"])
    for string in _PREC_SQRT_STRING.findall(text):
        call = re.compile(rf"^(\s*%[\w.]+) = (?:tail )?call i32 @__nvvm_reflect\(ptr {re.escape(string)}\).*$",
                          re.M)
        text = call.sub(r"\1 = add i32 0, 1", text)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".bc.tmp")
    os.close(fd)
    try:
        _run([clang_path() or CLANG, *ir, "-c", "-emit-llvm", "-", "-o", tmp], stdin=text)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _run(cmd: list[str], stdin: str | None = None) -> str:
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(f"{' '.join(cmd[:2])} ... failed: {_diagnostics(proc.stderr)[:2000]}")
    return proc.stdout


# External functions clang leaves for a library the PTX never gets: libdevice's __nv_*
# (libdevice missing) or an NVVM intrinsic this clang does not know (a newer libdevice).
_EXTERN_FUNC = re.compile(r"^\s*\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([\w$.]+)", re.M)


def _clang(full_src: str, opt: int) -> str:
    if clang_path() is None:
        raise CompileError(f"{CLANG} not found: {INSTALL_HINT}")
    libdevice, why_not = clang_libdevice()         # integer kernels compile without it
    proc = subprocess.run(clang_command(opt, libdevice), input=full_src, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(_diagnostics(proc.stderr) or f"{CLANG} failed with exit code {proc.returncode}")
    externs = set(_EXTERN_FUNC.findall(proc.stdout))
    missing = sorted(name for name in externs if name.startswith("__nv_"))
    if missing:
        why = why_not or f"libdevice ({libdevice_path()}) lacks them"
        raise CompileError(f"the kernel calls the CUDA math library ({', '.join(missing)}), which clang links from "
                           f"libdevice, and {why}: {LIBDEVICE_HINT}")
    unknown = sorted(name for name in externs if name.startswith("llvm."))
    if unknown:
        raise CompileError(f"{CLANG} does not know the NVVM intrinsics {', '.join(unknown)} (called by libdevice "
                           f"{libdevice_path()}, newer than {CLANG}); use the NVRTC front end (frontend='nvrtc')")
    return proc.stdout


def _diagnostics(log: str) -> str:
    """Keep the error/warning/note lines; drop the 'N errors generated' summary."""
    keep = [ln for ln in log.splitlines() if ln.strip() and "generated when compiling" not in ln]
    return "\n".join(keep)


# ---------------------------------------------------------------------------
# NVRTC (from the nvidia-cuda-nvrtc wheel, through ctypes)
# ---------------------------------------------------------------------------
NVRTC_OPTIONS = ("--gpu-architecture=compute_75", "--std=c++17", "-lineinfo", f"--include-path={INCLUDE_DIR}",
                 *NVRTC_FP_OPTIONS)


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
