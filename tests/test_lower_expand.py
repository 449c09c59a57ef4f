"""lower(..., expand=...): MULHI/MULHIU/DIV/DIVU/REM/REMU micro-coded into the
ALU ops the model engine has. Each op in a small CUDA kernel (and a few
hand-written PTX kernels for constant operands and shared div/rem loops),
lowered with and without expansion, run on the interpreter over edge and
random operands against Python-int models of the C/PTX semantics written
here; then every suite kernel that uses one of the ops, with expansion on."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from qwengpu import api, interp, suite
from qwengpu.launch import Launch
from qwengpu.toolchain.frontend import compile_cuda
from qwengpu.toolchain.lower import EXPANDABLE, MODEL_EXPANSIONS, lower
from qwengpu.toolchain.ptx import parse_ptx

M = 0xFFFF_FFFF
INT_MIN, INT_MAX = 0x8000_0000, 0x7FFF_FFFF
EXPANDED = {"MULHI", "MULHIU", "DIV", "DIVU", "REM", "REMU"}


# ---------------------------------------------------------------------------
# Reference semantics (Python ints), from the PTX manual plus the machine's
# defined cases for C's undefined ones: x/0 = -1, x%0 = x, INT_MIN/-1 wraps
# ---------------------------------------------------------------------------
def signed(x):
    return x - (1 << 32) if x & INT_MIN else x


def trunc_div(a, b):
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


REFERENCE = {
    "mulhiu": lambda a, b: (a * b) >> 32,
    "mulhi": lambda a, b: ((signed(a) * signed(b)) >> 32) & M,
    "divu": lambda a, b: a // b if b else M,
    "remu": lambda a, b: a % b if b else a,
    "div": lambda a, b: trunc_div(signed(a), signed(b)) & M if b else M,
    "rem": lambda a, b: (signed(a) - trunc_div(signed(a), signed(b)) * signed(b)) & M if b else a,
}
OP_OF = {"mulhiu": "MULHIU", "mulhi": "MULHI", "divu": "DIVU", "remu": "REMU", "div": "DIV", "rem": "REM"}

CUDA = r"""
#define K(name, T, expr) extern "C" __global__ void name(const T *a, const T *b, T *out, int n) { \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                           \
    if (i < n) { T x = a[i], y = b[i]; out[i] = expr; } }
K(mulhiu, unsigned, __umulhi(x, y))
K(mulhi, int, __mulhi(x, y))
K(divu, unsigned, x / y)
K(remu, unsigned, x % y)
K(div, int, x / y)
K(rem, int, x % y)
"""

EDGES = [0, 1, 2, 3, 7, 10, 0xFFFF, 0x10000, 0x12345678, INT_MAX, INT_MIN, INT_MIN + 1, M - 1, M]


def operands(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, then random words of random bit lengths (so
    quotients and loop trip counts differ between the lanes of a warp)."""
    rng = np.random.default_rng(seed)
    pairs = [(x, y) for x in EDGES for y in EDGES]
    n_random = 256 - len(pairs)
    words = rng.integers(0, 2**32, (2, n_random), dtype=np.uint64)
    lengths = rng.integers(1, 33, (2, n_random), dtype=np.uint64)
    rand = words & ((np.uint64(1) << lengths) - np.uint64(1))
    a = np.array([x for x, _ in pairs] + rand[0].tolist(), dtype=np.uint64)
    b = np.array([y for _, y in pairs] + rand[1].tolist(), dtype=np.uint64)
    return a.astype(np.uint32), b.astype(np.uint32)


@functools.lru_cache(maxsize=None)
def cuda_module():
    return parse_ptx(compile_cuda(CUDA, filename="expand_ops.cu"))


def ops_in(program) -> set[str]:
    return {ins.op.name for blk in program.blocks for ins in blk.instrs}


def run(program, a, b, grid=16, block=16, extra=()):
    out = np.zeros(len(a), np.uint32)
    args = [a.copy(), b.copy(), out, *extra]
    launch = Launch.build(program, (grid, 1, 1), (block, 1, 1), args)
    interp.run(program, launch.grid, launch.block, launch.params, launch.memory)
    launch.copy_back()
    return out


@pytest.mark.parametrize("kernel", list(REFERENCE))
def test_op_kernel_matches_reference(kernel):
    plain = lower(cuda_module(), kernel)
    expanded = lower(cuda_module(), kernel, expand=MODEL_EXPANSIONS)
    assert OP_OF[kernel] in ops_in(plain)            # the test really exercises the op
    assert not ops_in(expanded) & EXPANDED
    a, b = operands(seed=len(kernel))
    want = np.array([REFERENCE[kernel](int(x), int(y)) for x, y in zip(a, b)], np.uint32)
    n = np.int32(len(a))
    got_plain, got = run(plain, a, b, extra=[n]), run(expanded, a, b, extra=[n])
    np.testing.assert_array_equal(got_plain, want)
    bad = np.flatnonzero(got != want)
    assert not bad.size, [(hex(a[j]), hex(b[j]), hex(got[j]), hex(want[j])) for j in bad[:5]]


def test_hand_computed_edge_cases():
    """A few results worked out by hand, independent of the model above."""
    cases = {"div": [(INT_MIN, M, INT_MIN), (7, 0, M), ((-7) & M, 2, (-3) & M), (7, (-2) & M, (-3) & M)],
             "rem": [(INT_MIN, M, 0), (5, 0, 5), ((-7) & M, 2, (-1) & M), (7, (-2) & M, 1)],
             "divu": [(M, 1, M), (M, 0x10000, 0xFFFF), (5, 0, M), (3, 7, 0)],
             "remu": [(M, 0x10000, 0xFFFF), (5, 0, 5), (M, M, 0)],
             "mulhiu": [(M, M, M - 1), (0x10000, 0x10000, 1), (INT_MIN, 2, 1)],
             "mulhi": [(M, M, 0), (INT_MIN, INT_MIN, 0x4000_0000), (INT_MIN, 2, M)]}
    for kernel, rows in cases.items():
        prog = lower(cuda_module(), kernel, expand=MODEL_EXPANSIONS)
        a, b, want = (np.array(col, np.uint32) for col in zip(*rows))
        got = run(prog, a, b, grid=1, block=len(a), extra=[np.int32(len(a))])
        np.testing.assert_array_equal(got, want, err_msg=kernel)


# ---------------------------------------------------------------------------
# Hand-written PTX: constant operands, a div/rem pair sharing one loop, and a
# result that overwrites an operand before the partner reads it
# ---------------------------------------------------------------------------
PTX_TEMPLATE = """
.version 6.3
.target sm_75
.address_size 32
.visible .entry k(.param .u32 pa, .param .u32 pb, .param .u32 pout)
{{
    .reg .b32 %r<12>;
    ld.param.u32 %r1, [pa];
    ld.param.u32 %r2, [pb];
    ld.param.u32 %r3, [pout];
    mov.u32 %r4, %tid.x;
    shl.b32 %r4, %r4, 2;
    add.u32 %r5, %r1, %r4;
    ld.global.u32 %r1, [%r5];
    add.u32 %r5, %r2, %r4;
    ld.global.u32 %r2, [%r5];
    {body}
    mul.lo.u32 %r4, %r4, 4;
    add.u32 %r3, %r3, %r4;
    st.global.u32 [%r3], %r6;
    st.global.u32 [%r3+4], %r7;
    st.global.u32 [%r3+8], %r8;
    st.global.u32 [%r3+12], %r9;
    ret;
}}"""

PTX_CASES = {   # body -> the four outputs (r6..r9) as functions of (a, b)
    "div.u32 %r6, %r1, %r2; rem.u32 %r7, %r1, %r2; div.s32 %r8, %r1, %r2; rem.s32 %r9, %r1, %r2;":
        lambda a, b: [REFERENCE["divu"](a, b), REFERENCE["remu"](a, b), REFERENCE["div"](a, b),
                      REFERENCE["rem"](a, b)],
    "div.u32 %r6, %r1, 8; rem.u32 %r7, %r1, 8; div.u32 %r8, %r1, 7; rem.s32 %r9, %r1, -7;":
        lambda a, b: [a >> 3, a & 7, a // 7, REFERENCE["rem"](a, (-7) & M)],
    "div.u32 %r6, 1000, %r2; rem.s32 %r7, -1000, %r2; mul.hi.u32 %r8, %r1, 40000; mul.hi.s32 %r9, %r1, -3;":
        lambda a, b: [REFERENCE["divu"](1000, b), REFERENCE["rem"]((-1000) & M, b), REFERENCE["mulhiu"](a, 40000),
                      REFERENCE["mulhi"](a, (-3) & M)],
    # the quotient overwrites the dividend: the remainder must not reuse the loop
    "div.u32 %r1, %r1, %r2; rem.u32 %r7, %r1, %r2; mov.u32 %r6, %r1; div.s32 %r8, 77, 0; rem.s32 %r9, 77, 0;":
        lambda a, b: [REFERENCE["divu"](a, b), REFERENCE["remu"](REFERENCE["divu"](a, b), b), M, 77],
}


@pytest.mark.parametrize("body", list(PTX_CASES))
def test_ptx_cases(body):
    module = parse_ptx(PTX_TEMPLATE.format(body=body))
    prog = lower(module, "k", expand=MODEL_EXPANSIONS)
    assert not ops_in(prog) & EXPANDED
    fixed = [(INT_MIN, M), (INT_MIN, 1), (5, 0), (M, 0), (0, 3), (M, M), (INT_MAX, 2), (M, 0x10000)]
    ra, rb = operands(seed=7)
    a = np.array([x for x, _ in fixed] + ra[-8:].tolist(), np.uint32)      # 16 threads: one thread block
    b = np.array([y for _, y in fixed] + rb[-8:].tolist(), np.uint32)
    out = np.zeros(4 * len(a), np.uint32)
    launch = Launch.build(prog, (1, 1, 1), (len(a), 1, 1), [a, b, out])
    interp.run(prog, launch.grid, launch.block, launch.params, launch.memory)
    launch.copy_back()
    want = np.array([PTX_CASES[body](int(x), int(y)) for x, y in zip(a, b)], np.uint32).ravel()
    np.testing.assert_array_equal(out, want)


def test_div_rem_pair_shares_one_loop():
    body = "div.u32 %r6, %r1, %r2; rem.u32 %r7, %r1, %r2; mov.u32 %r8, 0; mov.u32 %r9, 0;"
    prog = lower(parse_ptx(PTX_TEMPLATE.format(body=body)), "k", expand=MODEL_EXPANSIONS)
    backward = [i for i, blk in enumerate(prog.blocks) if blk.term.kind.name == "BRC" and blk.term.target <= i]
    assert len(backward) == 1


def test_default_is_unchanged_and_bad_names_are_refused():
    assert MODEL_EXPANSIONS <= EXPANDABLE == EXPANDED | {"FDIV", "FSQRT", "ATOM.FADD"}   # floats: test_float_microcode.py
    assert lower(cuda_module(), "divu").listing() == lower(cuda_module(), "divu", expand=frozenset()).listing()
    # a kernel without the expanded ops lowers to the same program
    assert lower(cuda_module(), "mulhi").listing() == lower(cuda_module(), "mulhi", expand=frozenset({"DIV"})).listing()
    with pytest.raises(ValueError, match="ADD"):
        lower(cuda_module(), "divu", expand=frozenset({"ADD"}))


# ---------------------------------------------------------------------------
# The kernel suite: every kernel whose plain lowering uses an expandable op
# ---------------------------------------------------------------------------
def _uses_expandable(case) -> bool:
    spec = suite.load_spec(case)
    module = parse_ptx(compile_cuda(case.source.read_text(), filename=case.source.name))
    return bool(ops_in(lower(module, spec.KERNEL)) & EXPANDED)


SUITE_CASES = [c for c in suite.discover() if _uses_expandable(c)]


def test_suite_has_kernels_to_check():
    assert {"div_signed", "div_unsigned", "gcd_euclid", "isqrt_bsearch"} <= {c.name for c in SUITE_CASES}


@pytest.mark.parametrize("case", SUITE_CASES, ids=lambda c: c.name)
def test_suite_kernel_with_expansion(case):
    device = api.Device("interp", micro_code=True)          # the model engine's programs
    report = suite.run_case(case, device)
    assert report.passed, report.reason
    module = device.compile(case.source.read_text(), filename=case.source.name)
    assert not ops_in(module.get_function(report.kernel).program) & EXPANDED


# ---------------------------------------------------------------------------
# 64-bit division: lowered into loops on both engines (the word-by-word path
# for divisors 1..2^31, radix 4 up to 2^30 and radix 2 above, the 64-bit loop
# for the rest); operands chosen to hit each path and its edges, against
# Python's ints
# ---------------------------------------------------------------------------
M64 = 2**64 - 1
CUDA64 = r"""
#define K(name, T, expr) extern "C" __global__ void name(const T *a, const T *b, T *out, int n) { \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                                           \
    if (i < n) { T x = a[i], y = b[i]; out[i] = expr; } }
K(divu64, unsigned long long, x / y)
K(remu64, unsigned long long, x % y)
K(div64, long long, x / y)
K(rem64, long long, x % y)
"""


def signed64(x):
    return x - (1 << 64) if x >> 63 else x


def trunc_div64(a, b):
    return trunc_div(signed64(a), signed64(b)) & M64


def by_zero64(a, signed_op):
    """x/0 as the compiled kernel gives it: clang divides by 32 bits when both
    operands fit in 32 bits (its slow-division bypass), where x/0 is the 32-bit
    all-ones; otherwise the machine's 64-bit x/0, computed on magnitudes: all
    ones, negated for a negative dividend of a signed division."""
    if a <= M:
        return M
    return 1 if signed_op and a >> 63 else M64


REFERENCE64 = {     # x%0 = x, INT64_MIN / -1 wraps
    "divu64": lambda a, b: a // b if b else by_zero64(a, False),
    "remu64": lambda a, b: a % b if b else a,
    "div64": lambda a, b: trunc_div64(a, b) if b else by_zero64(a, True),
    "rem64": lambda a, b: (signed64(a) - signed64(trunc_div64(a, b)) * signed64(b)) & M64 if b else a,
}
EDGES64 = [0, 1, 2, 3, 7, 10, 0xFFFF, 0x10000, 0x1234_5678, 2**30 - 1, 2**30, 2**30 + 1, INT_MAX, INT_MIN,
           INT_MIN + 1, M - 1, M, M + 1, M + 2, 0x1_0000_0001, 0x1234_5678_9ABC_DEF0, 2**63 - 1, 2**63,
           2**63 + 1, M64 - 1, M64, (-3) & M64, (-(2**31)) & M64, (-(2**31) - 1) & M64]


def operands64(seed: int, n_random: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, then random words of random bit lengths: divisors
    around 2^30 (the radix-4 steps' bound), 2^31 and 2^32 (the fast path's bounds)
    and small ones, and dividends with high words below and above the divisor."""
    rng = np.random.default_rng(seed)
    pairs = [(x, y) for x in EDGES64 for y in EDGES64]
    words = rng.integers(0, 2**64, (2, n_random), dtype=np.uint64)
    lengths = rng.integers(1, 65, (2, n_random), dtype=np.uint64)
    rand = (words & ((np.uint64(1) << lengths) - np.uint64(1)) | (lengths == 64) * words).tolist()
    near = [2**p + k for p in (30, 31, 32) for k in range(-3, 4)]
    rand[1][:len(near) * 20] = [near[k % len(near)] for k in range(len(near) * 20)]
    sign = rng.integers(0, 2, n_random)         # negative divisors of every size for the signed ops
    rand[1] = [(-y) & M64 if s and k % 3 == 0 else y for k, (y, s) in enumerate(zip(rand[1], sign))]
    a = np.array([x for x, _ in pairs] + rand[0], dtype=np.uint64)
    b = np.array([y for _, y in pairs] + rand[1], dtype=np.uint64)
    return a, b


@functools.lru_cache(maxsize=None)
def cuda64_module():
    return parse_ptx(compile_cuda(CUDA64, filename="div64.cu"))


@pytest.mark.parametrize("expand", [frozenset(), MODEL_EXPANSIONS], ids=["plain", "expanded"])
@pytest.mark.parametrize("kernel", list(REFERENCE64))
def test_64bit_division_matches_reference(kernel, expand):
    prog = lower(cuda64_module(), kernel, expand=expand)
    assert not (ops_in(prog) & EXPANDED if expand else ops_in(prog) & {"MULHI", "MULHIU"})
    a, b = operands64(seed=len(kernel))
    out = np.zeros(len(a), np.uint64)
    for lo in range(0, len(a), 128):        # 128 64-bit words of each of the 3 arrays a launch
        x, y = a[lo:lo + 128], b[lo:lo + 128]
        o = np.zeros(len(x), np.uint64)
        launch = Launch.build(prog, (8, 1, 1), (16, 1, 1), [x.view(np.uint32).copy(), y.view(np.uint32).copy(),
                                                              o.view(np.uint32), np.int32(len(x))])
        interp.run(prog, launch.grid, launch.block, launch.params, launch.memory)
        launch.copy_back()
        out[lo:lo + 128] = o
    got = out.tolist()
    want = [REFERENCE64[kernel](x, y) for x, y in zip(a.tolist(), b.tolist())]
    bad = [j for j in range(len(a)) if got[j] != want[j]]
    assert not bad, [(hex(a[j]), hex(b[j]), hex(got[j]), hex(want[j])) for j in bad[:5]]


@pytest.mark.parametrize("kernel", ["divu", "remu", "div", "rem"])
def test_32bit_division_many_operands(kernel):
    """The micro-coded 32-bit loop over a few thousand pairs (256 per launch):
    every trip count from 1 to 32, divisors with the top bit set, n < d, n == d,
    powers of two and their neighbours."""
    prog = lower(cuda_module(), kernel, expand=MODEL_EXPANSIONS)
    rng = np.random.default_rng(99)
    pows = [1 << k for k in range(32)]
    special = [(p + e) & M for p in pows for e in (-1, 0, 1)]
    a = [x for x in special for _ in range(8)] + operands(seed=3)[0].tolist() * 8
    b = rng.choice(special, len(special) * 8).tolist() + operands(seed=5)[1].tolist() * 8
    a += b[:512]                                            # n == d
    b += b[:512]
    a, b = np.array(a, np.uint32), np.array(b, np.uint32)
    got = np.concatenate([run(prog, a[lo:lo + 256], b[lo:lo + 256], extra=[np.int32(len(a[lo:lo + 256]))])
                          for lo in range(0, len(a), 256)])
    want = np.array([REFERENCE[kernel](int(x), int(y)) for x, y in zip(a, b)], np.uint32)
    bad = np.flatnonzero(got != want)
    assert not bad.size, [(hex(a[j]), hex(b[j]), hex(got[j]), hex(want[j])) for j in bad[:5]]
