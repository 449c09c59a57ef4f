"""Static checks of the kernel suite (kernels/NAME.cu + NAME.py) and the float suite
(kernels/float/, run on the interpreter: tests/test_float_suite.py), without compiling:
every spec has its source, the required names, deterministic inputs inside the
machine limits, and a reference aligned with the arguments; together the integer suite
covers every required feature tag."""
import importlib.util
import re
import types
from pathlib import Path

import numpy as np
import pytest

from qwengpu import isa

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
FLOAT_DIR = KERNELS_DIR / "float"
SPEC_PATHS = sorted(KERNELS_DIR.glob("*.py"))
# the float suite's specs; names starting with _ are its shared helpers (_fref.py), not specs
FLOAT_SPEC_PATHS = sorted(p for p in FLOAT_DIR.glob("*.py") if not p.name.startswith("_"))
ALL_SPEC_PATHS = SPEC_PATHS + FLOAT_SPEC_PATHS

REQUIRED_FEATURES = {
    "elementwise", "grid-stride", "multi-block", "multi-warp", "2d-block", "3d",
    "partial-warp", "partial-block", "divergence", "nested-divergence", "early-return",
    "data-dependent-loop", "shared", "barrier", "reduction", "scan", "histogram",
    "transpose", "matmul", "atomic-add", "atomic-sub", "atomic-exch", "atomic-min",
    "atomic-max", "atomic-cas", "atomic-and", "atomic-or", "atomic-xor", "atomic-inc",
    "atomic-dec", "shuffle-idx", "shuffle-up", "shuffle-down", "shuffle-xor",
    "vote-ballot", "vote-any", "vote-all", "signed-div", "unsigned-div",
    "div-by-constant", "wraparound", "bitops", "narrow-types", "64-bit",
}
# Spellings some specs use for a required tag.
TAG_ALIASES = {
    "shared-memory": "shared",
    "shfl-idx": "shuffle-idx", "shfl-up": "shuffle-up",
    "shfl-down": "shuffle-down", "shfl-xor": "shuffle-xor",
}

INT32_RANGE = (-2**31, 2**32 - 1)   # a scalar word may be given signed or unsigned


def load_spec(path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"kernel_spec_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def words(x) -> np.ndarray:
    """An array's or a scalar's elements as their bits: a float's NaN payload and the sign of its
    zero count, and two NaNs with the same bits are equal (np.array_equal says neither)."""
    a = np.asarray(x)
    return a.view(np.uint32) if a.dtype == np.float32 else a


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(words(a), words(b))


def dims_problems(what, dims, limit):
    if not (isinstance(dims, tuple) and 1 <= len(dims) <= 3
            and all(isinstance(d, (int, np.integer)) and d >= 1 for d in dims)):
        return [f"{what} must be a tuple of 1-3 positive ints, got {dims!r}"]
    total = int(np.prod(dims))
    if total > limit:
        return [f"{what} {dims} has {total}; the limit is {limit}"]
    return []


def arg_problems(i, arg):
    if isinstance(arg, np.ndarray):
        if arg.ndim != 1 or arg.dtype not in (np.int32, np.uint32, np.float32):
            return [f"arg {i}: arrays must be 1-D int32/uint32/float32, got {arg.dtype} shape {arg.shape}"]
        return []
    if isinstance(arg, (np.int32, np.uint32, np.float32)):
        return []
    if isinstance(arg, int) and not isinstance(arg, bool) and INT32_RANGE[0] <= arg <= INT32_RANGE[1]:
        return []
    return [f"arg {i}: scalars must be np.int32, np.uint32, np.float32 or a 32-bit int, got {arg!r}"
            + (" (a float scalar is an np.float32: a Python float would be rounded by the launch)"
               if isinstance(arg, (float, np.floating)) else "")]


def launch_problems(grid, block, args):
    problems = dims_problems("grid", grid, isa.MAX_GRID_BLOCKS)
    problems += dims_problems("block", block, isa.MAX_BLOCK_THREADS)
    for i, arg in enumerate(args):
        problems += arg_problems(i, arg)
    words = sum(a.size for a in args if isinstance(a, np.ndarray))
    if words > isa.GLOBAL_WORDS:
        problems.append(f"arrays need {words} words of global memory; the limit is {isa.GLOBAL_WORDS}")
    return problems


def reference_problems(args, expected):
    if not isinstance(expected, list) or len(expected) != len(args):
        return [f"reference must return a list of {len(args)} entries, got {type(expected).__name__}"
                f" of {len(expected) if hasattr(expected, '__len__') else '?'}"]
    problems = []
    for i, (arg, exp) in enumerate(zip(args, expected)):
        if exp is None:
            continue
        if not isinstance(arg, np.ndarray):
            problems.append(f"reference entry {i} must be None: arg {i} is a scalar")
            continue
        exp = np.asarray(exp)
        if exp.shape != arg.shape or exp.dtype != arg.dtype:
            problems.append(f"reference entry {i} is {exp.dtype}{exp.shape}, arg is {arg.dtype}{arg.shape}")
    changed = any(e is not None and isinstance(a, np.ndarray) and not same_bits(np.asarray(e), a)
                  for a, e in zip(args, expected))
    if not changed:
        problems.append("reference expects no array to change: the kernel would test nothing")
    return problems


def spec_problems(module, cu_text):
    """Everything wrong with one kernel spec, as readable messages."""
    problems = []
    for name in ("KERNEL", "FEATURES", "launch", "reference"):
        if not hasattr(module, name):
            problems.append(f"missing {name}")
    if problems:
        return problems
    if not re.search(rf"__global__\s+void\s+{re.escape(module.KERNEL)}\s*\(", cu_text):
        problems.append(f"no __global__ void {module.KERNEL}(...) in the .cu")
    if "#include" in cu_text:
        problems.append("the .cu has an #include; the prelude provides everything")
    if not (isinstance(module.FEATURES, list) and module.FEATURES
            and all(isinstance(f, str) for f in module.FEATURES)):
        problems.append("FEATURES must be a non-empty list of strings")
    grid, block, args = module.launch()
    problems += launch_problems(grid, block, args)
    if problems:
        return problems
    problems += reference_problems(args, module.reference(*copies(args)))
    return problems


def same_launch(first, second):
    (g1, b1, a1), (g2, b2, a2) = first, second
    return (g1 == g2 and b1 == b2 and len(a1) == len(a2)
            and all(type(x) is type(y) and np.array_equal(words(x), words(y))
                    and getattr(x, "dtype", None) == getattr(y, "dtype", None)
                    for x, y in zip(a1, a2)))


def spec_id(path: Path) -> str:
    return f"float/{path.stem}" if path.parent == FLOAT_DIR else path.stem


@pytest.fixture(scope="module", params=ALL_SPEC_PATHS, ids=[spec_id(p) for p in ALL_SPEC_PATHS])
def spec(request):
    return request.param, load_spec(request.param)


def test_suite_is_not_empty():
    assert len(SPEC_PATHS) >= 20, f"only {len(SPEC_PATHS)} kernel specs in {KERNELS_DIR}"
    assert len(FLOAT_SPEC_PATHS) >= 15, f"only {len(FLOAT_SPEC_PATHS)} kernel specs in {FLOAT_DIR}"


def test_spec_is_valid(spec):
    path, module = spec
    cu = path.with_suffix(".cu")
    assert cu.exists(), f"{path.name} has no matching {cu.name}"
    assert spec_problems(module, cu.read_text()) == []


def test_launch_is_deterministic(spec):
    _, module = spec
    assert same_launch(module.launch(), module.launch()), "two launch() calls differ"


def test_reference_is_deterministic_and_leaves_inputs_alone(spec):
    _, module = spec
    _, _, args = module.launch()
    inputs = copies(args)
    first, second = module.reference(*copies(args)), module.reference(*inputs)
    for a, b in zip(first, second):
        assert (a is None) == (b is None) and (a is None or same_bits(a, b))
    assert same_launch(((1,), (1,), inputs), ((1,), (1,), args)), "reference mutated a caller's array"


@pytest.mark.parametrize("directory", [KERNELS_DIR, FLOAT_DIR], ids=["kernels", "float"])
def test_every_cu_has_a_spec(directory):
    orphans = [p.name for p in directory.glob("*.cu") if not p.with_suffix(".py").exists()]
    assert orphans == []


def test_float_specs_are_tagged_float():
    untagged = [p.stem for p in FLOAT_SPEC_PATHS if "float" not in load_spec(p).FEATURES]
    assert untagged == []


def test_suite_covers_required_features():
    tags = {TAG_ALIASES.get(t, t) for p in SPEC_PATHS for t in load_spec(p).FEATURES}
    missing = sorted(REQUIRED_FEATURES - tags)
    assert not missing, f"no kernel spec covers these feature tags: {missing}"


# --- the checker itself must catch broken specs --------------------------------

def fake_spec(grid=(1,), block=(4,), args=None, expected=None, kernel="k"):
    args = args if args is not None else [np.zeros(4, np.int32), np.int32(4)]
    expected = expected if expected is not None else [np.ones(4, np.int32), None]
    return types.SimpleNamespace(KERNEL=kernel, FEATURES=["elementwise"],
                                 launch=lambda: (grid, block, copies(args)),
                                 reference=lambda *a: expected)


CU = '__global__ void k(int *x, int n) {}'


def test_checker_accepts_a_good_spec():
    assert spec_problems(fake_spec(), CU) == []


@pytest.mark.parametrize("bad, needle", [
    (dict(block=(8, 4, 40)), "block (8, 4, 40) has 1280; the limit is 1024"),
    (dict(grid=(16, 17)), "grid (16, 17) has 272; the limit is 256"),
    (dict(block=(0,)), "positive ints"),
    (dict(args=[np.zeros(16500, np.int32)], expected=[np.ones(16500, np.int32)]), "16500 words"),
    (dict(args=[np.zeros(4, np.int64)], expected=[np.ones(4, np.int64)]), "1-D int32/uint32/float32"),
    (dict(args=[np.zeros(4, np.float64)], expected=[np.ones(4, np.float64)]), "1-D int32/uint32/float32"),
    (dict(args=[np.zeros((2, 2), np.int32)], expected=[np.ones((2, 2), np.int32)]), "1-D int32/uint32/float32"),
    (dict(args=[np.zeros(4, np.float32), 1.5]), "an np.float32"),
    (dict(args=[np.zeros(4, np.float32), np.int32(4)], expected=[np.ones(4, np.float64), None]), "float64(4,)"),
    (dict(args=[np.zeros(4, np.float32), np.int32(4)], expected=[np.zeros(4, np.float32), None]), "test nothing"),
    (dict(args=[np.zeros(4, np.int32), 2**40]), "32-bit int"),
    (dict(expected=[np.ones(4, np.int32)]), "list of 2 entries"),
    (dict(expected=[np.ones(5, np.int32), None]), "int32(5,)"),
    (dict(expected=[np.ones(4, np.uint32), None]), "uint32(4,)"),
    (dict(expected=[np.ones(4, np.int32), 7]), "entry 1 must be None"),
    (dict(expected=[np.zeros(4, np.int32), None]), "test nothing"),
    (dict(kernel="other"), "no __global__ void other"),
])
def test_checker_rejects_bad_specs(bad, needle):
    problems = spec_problems(fake_spec(**bad), CU)
    assert any(needle in p for p in problems), problems


def test_checker_accepts_float_arrays_and_scalars():
    args = [np.zeros(4, np.float32), np.float32(2.5)]
    assert spec_problems(fake_spec(args=args, expected=[np.full(4, np.nan, np.float32), None]), CU) == []
    # -0.0 == 0.0 but its bits differ: the reference does expect a change
    assert spec_problems(fake_spec(args=args, expected=[np.full(4, -0.0, np.float32), None]), CU) == []


def test_same_launch_compares_float_bits():
    nan = lambda: ((1,), (4,), [np.full(4, np.nan, np.float32), np.float32(np.nan)])
    assert same_launch(nan(), nan())
    zeros = lambda sign: ((1,), (4,), [np.full(4, sign * 0.0, np.float32)])
    assert not same_launch(zeros(1), zeros(-1))


def test_checker_spots_nondeterministic_launch():
    counter = iter(range(100))
    flaky = lambda: ((1,), (4,), [np.full(4, next(counter), np.int32)])
    assert not same_launch(flaky(), flaky())
