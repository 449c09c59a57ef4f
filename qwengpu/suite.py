"""The kernel suite: kernels/NAME.cu + kernels/NAME.py (format in
docs/architecture.md), run on an engine and checked word for word against
each kernel's independent NumPy reference (a float32 array bit for bit). The
float kernels are a suite of their own in kernels/float/ (`directory=`, `qgpu
suite --dir kernels/float`): discover() does not recurse, so the default suite,
which CI runs on the model engine, does not include them."""
from __future__ import annotations

import copy
import fnmatch
import importlib.util
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from qwengpu.api import ENGINES, Device, Function
from qwengpu.driver import DEFAULT_BATCH
from qwengpu.errors import QwenGpuError, plural
from qwengpu.launch import Launch

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "kernels"
# the suite's kernels are known to finish: a model launch's default limit is far above the
# longest (isqrt_bsearch, 14,827 tokens; int64_div, 5,134) instead of the single-launch DEFAULT_MAX_TOKENS
SUITE_MAX_TOKENS = 200_000


@dataclass
class KernelCase:
    name: str          # file stem
    source: Path       # NAME.cu
    spec: Path         # NAME.py


@dataclass
class KernelReport:
    name: str
    kernel: str = ""
    passed: bool = False
    reason: str = ""                  # why it failed: error message or first mismatches
    passes: int | None = None         # the engine's count (LaunchResult.passes)
    instructions: int | None = None
    tokens: int | None = None         # generated tokens (model engine)
    blocks: int | None = None         # machine blocks executed, the same on every engine
    seconds: float = 0.0              # compile + lower + run
    features: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)   # device printf output, one string per call

    @property
    def status(self) -> str:
        return "passed" if self.passed else "failed"

    def to_dict(self) -> dict:
        return {**asdict(self), "status": self.status}


def discover(directory: Path | str = DEFAULT_DIR, pattern: str | None = None) -> list[KernelCase]:
    """Every NAME.cu with a NAME.py beside it, sorted by name; `pattern` keeps
    names that contain it or match it as a glob."""
    directory = Path(directory)
    if not directory.is_dir():
        raise QwenGpuError(f"kernel directory {directory} does not exist")
    cases = [KernelCase(cu.stem, cu, cu.with_suffix(".py"))
             for cu in sorted(directory.glob("*.cu")) if cu.with_suffix(".py").exists()]
    if pattern:
        cases = [c for c in cases if _matches(c.name, pattern)]
    return cases


def _matches(name: str, pattern: str | None) -> bool:
    return not pattern or pattern in name or fnmatch.fnmatch(name, pattern)


def unpaired(directory: Path | str = DEFAULT_DIR, pattern: str | None = None) -> list[str]:
    """The kernel specs discover() skips, one line each: a NAME.py without its NAME.cu (likely a
    misnamed or missing source). A NAME.cu alone is a plain CUDA file, not a suite kernel, and
    names starting with _ or . are helpers (__init__.py): neither is reported."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return [f"{py}: skipped: no {py.stem}.cu beside it (a suite kernel is NAME.cu with NAME.py)"
            for py in sorted(directory.glob("*.py"))
            if not py.name.startswith(("_", ".")) and _matches(py.stem, pattern)
            and not py.with_suffix(".cu").exists()]


def load_spec(case: KernelCase) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"qwengpu_suite_{case.name}", case.spec)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for attr in ("KERNEL", "launch", "reference"):
        if not hasattr(module, attr):
            raise QwenGpuError(f"{case.spec.name} lacks {attr} (see docs/architecture.md, kernel suite format)")
    return module


@dataclass
class _Prepared:
    """A kernel compiled and laid out, ready to launch."""
    report: KernelReport
    args: list
    expected: list
    function: Function
    launch: Launch


def prepare(case: KernelCase, device: Device) -> KernelReport | _Prepared:
    """Compile, lower and lay out one kernel's launch: its _Prepared, or its failed report."""
    report = KernelReport(case.name)
    start = time.perf_counter()
    try:
        spec = load_spec(case)
        report.kernel, report.features = spec.KERNEL, list(getattr(spec, "FEATURES", []))
        grid, block, args = spec.launch()
        args = list(args)
        expected = spec.reference(*copy.deepcopy(args))
        fn = device.compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
        prepared = _Prepared(report, args, expected, fn, fn.launch(grid, block, args))
    except Exception as e:
        report.reason = _reason(e, case)
        prepared = report
    report.seconds = time.perf_counter() - start
    return prepared


def run_case(case: KernelCase, device: Device) -> KernelReport:
    """Compile, lower and run one kernel; never raises."""
    return run_batched([case], device, 1)[0]


def mismatches(args, expected, names, show: int = 3) -> list[str]:
    """Compare each non-None expected array with the final argument, as 32-bit words: a float32
    argument by its bits (NaN payloads and the sign of zero count; its reference must be float32
    too, never a float64 rounded here), an integer argument by the low 32 bits of the
    reference's values."""
    if len(expected) != len(args):
        return [f"reference returned {plural(len(expected), 'value')} for {plural(len(args), 'argument')}"]
    problems = []
    for i, (got, want) in enumerate(zip(args, expected)):
        if want is None:
            continue
        name = names[i] if i < len(names) else f"arg{i}"
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            problems.append(f"{name}: shape {got.shape}, expected {want.shape}")
            continue
        if got.dtype == np.float32 and want.dtype != np.float32:
            problems.append(f"{name}: the reference is {want.dtype} for a {got.dtype} argument; a float "
                            f"argument's reference must be float32 (computed in float32, not rounded from float64)")
            continue
        bits = got.dtype == np.float32
        bad = np.flatnonzero(_words(got, bits) != _words(want, bits))
        if bad.size:
            shown = ", ".join(f"[{j}] {_show(got[j])} != {_show(want[j])}" for j in bad[:show])
            more = f" (+{bad.size - show} more)" if bad.size > show else ""
            problems.append(f"{name}: {bad.size} of {got.size} differ: {shown}{more}")
    return problems


def _words(a: np.ndarray, bits: bool) -> np.ndarray:
    """An array's elements as 32-bit words (int64): a float32 array's bits (`bits`), otherwise the
    low 32 bits of the values."""
    if bits:
        return a.view(np.uint32).astype(np.int64)
    return a.astype(np.int64) & 0xFFFF_FFFF


def _show(v) -> str:
    """One element for a mismatch: an integer as it is, a float32 with its bits."""
    if isinstance(v, np.float32):
        return f"{v!s} (0x{int(np.array(v).view(np.uint32)):08x})"
    return str(v)


def run_suite(engine: str = "interp", frontend: str = "clang", pattern: str | None = None,
              directory: Path | str = DEFAULT_DIR, opt: int = 2, *, max_batch: int | None = None,
              device: Device | None = None, on_start=None, on_report=None, on_token=None) -> dict:
    """Run the suite: {"passed": P, "failed": F, "kernels": [report dicts]}. On the model engine
    `max_batch` runs that many launches in lockstep (`run_batched`); `device` replaces
    Device(engine, frontend, opt) (e.g. a model Device with check="replay"). Progress callbacks:
    `on_start(cases)` with the kernels found, `on_report(report)` as each finishes,
    `on_token(name, token)` for each token the model engine generates. A kernel's device printf
    output is in its report's `output`, not printed (the caller names the kernel it came from);
    `skipped`: what discover() left out (unpaired())."""
    device = device or Device(engine, frontend, opt)
    cases = discover(directory, pattern)
    if on_start:
        on_start(cases)
    if max_batch and ENGINES[device.engine].generates:
        reports = run_batched(cases, device, max_batch, on_report=on_report, on_token=on_token)
    else:                                       # one at a time: each compiled just before it runs
        reports = [run_batched([case], device, 1, on_report=on_report, on_token=on_token)[0] for case in cases]
    passed = sum(r.passed for r in reports)
    return {"engine": device.engine, "frontend": device.frontend, "passed": passed, "failed": len(reports) - passed,
            "kernels": [r.to_dict() for r in reports], "skipped": unpaired(directory, pattern)}


def run_batched(cases: list[KernelCase], device: Device, max_batch: int = DEFAULT_BATCH,
                on_report=None, on_token=None) -> list[KernelReport]:
    """The kernels on `device` through Device.run_batch, up to `max_batch` launches of the model
    engine stepping together (vllm and llama.cpp take them all in one request; results from the
    copy-out). A report's seconds: its compile and lowering, plus its launch (in a batch, shared
    with the launches beside it). `on_report(report)` as each kernel finishes, `on_token(name,
    token)` for each generated token. A model Device without max_tokens gets SUITE_MAX_TOKENS.
    Never raises for one kernel."""
    prepared = [prepare(case, device) for case in cases]
    reports = [p if isinstance(p, KernelReport) else p.report for p in prepared]
    ready = [p for p in prepared if isinstance(p, _Prepared)]
    if on_report:
        for report in reports:
            if report.reason:
                on_report(report)

    def finished(index: int, result) -> None:
        _finish(ready[index], result)
        if on_report:
            on_report(ready[index].report)

    device.run_batch([(p.function, p.launch) for p in ready], max_batch=max_batch,
                     max_tokens=device.max_tokens or SUITE_MAX_TOKENS, on_done=finished,
                     on_token=(lambda i, t: on_token(ready[i].report.name, t)) if on_token else None)
    return reports


def _finish(p: _Prepared, result) -> None:
    """A launch's result into its kernel's report: counts, and mismatches against the reference."""
    report = p.report
    if isinstance(result, Exception):
        report.reason = _reason(result)
        return
    report.seconds += result.seconds
    report.passes, report.instructions, report.tokens = result.passes, result.instructions, result.tokens
    report.blocks, report.output = result.blocks, list(result.output)
    report.reason = "; ".join(mismatches(p.args, p.expected, p.function.arg_names))
    report.passed = not report.reason


def _reason(e: Exception, case: KernelCase | None = None) -> str:
    if isinstance(e, QwenGpuError):
        return f"{type(e).__name__}: {e}"
    frames = traceback.extract_tb(e.__traceback__)
    spec = _spec_frame(e, frames, case.spec) if case else None
    if spec:             # the kernel's own Python file raised: its launch(), reference() or module code
        line, function = spec
        where = f"line {line}" + (f", in {function}()" if function and function != "<module>" else "")
        return f"error in {case.spec.name} (the kernel's Python file, {where}): {type(e).__name__}: {e}"
    where = frames[-1]   # a bug somewhere: report it, keep running the suite
    return f"internal error {type(e).__name__}: {e} ({Path(where.filename).name}:{where.lineno})"


def _spec_frame(e: Exception, frames, spec: Path) -> tuple[int, str | None] | None:
    """(line, function) of the innermost traceback frame in the kernel's NAME.py (a syntax error:
    its line), or None when the error did not come from that file."""
    if isinstance(e, SyntaxError) and e.filename and Path(e.filename).resolve() == spec.resolve():
        return e.lineno or 0, None
    inside = [f for f in frames if Path(f.filename).resolve() == spec.resolve()]
    return (inside[-1].lineno, inside[-1].name) if inside else None
