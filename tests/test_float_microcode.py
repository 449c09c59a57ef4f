"""FDIV, FSQRT and ATOM.FADD micro-coded for the model engine (toolchain/fmicro.py).

1. The NumPy emulation the proofs run on (testing/fpemu.py) against fp32.fma, the independent
   oracle (tested against MPFR in test_fp32.py).
2. The cores, emulated bit for bit (testing/fmicro_proof.py): the reciprocal over all 2**23
   significands, the square root over a quarter of its 2**24 inputs in the four modes (all of
   them: `python -m qwengpu.testing.fmicro_proof`), the division over random pairs and one
   exhaustive slice; and that the checkers fail on results one ulp off.
3. The real expansion on the interpreter: kernels dividing and taking roots in the four modes,
   thousands of random and edge operands each (zeros, infinities, NaNs, subnormal operands and
   results, overflow, exact quotients), against fp32.div and fp32.sqrt; float atomics in global
   and shared memory against the native ATOM.FADD.
4. The float suite's kernels that use the three ops, run on the interpreter with the model
   engine's expansions.
"""
from __future__ import annotations

import functools
import json
import random

import numpy as np
import pytest
from typer.testing import CliRunner

from qwengpu import api, fp32, interp, isa, suite
from qwengpu.cli import app
from qwengpu.errors import MachineLimitError
from qwengpu.fp32 import Rnd
from qwengpu.launch import Launch
from qwengpu.testing import fmicro_proof as P
from qwengpu.testing import fpemu as E
from qwengpu.toolchain import fmicro
from qwengpu.toolchain.cfg import VBlock, VInstr, VTerm
from qwengpu.toolchain.frontend import compile_cuda
from qwengpu.toolchain.microcode import expand_ops
from qwengpu.toolchain.lower import MODEL_EXPANSIONS, lower
from qwengpu.toolchain.ptx import parse_ptx

MODES = {"rn": Rnd.RN, "rz": Rnd.RZ, "rd": Rnd.RM, "ru": Rnd.RP}


# ---------------------------------------------------------------------------
# 1. the emulation
# ---------------------------------------------------------------------------
def _patterns(rng, n, lo, hi):
    e = rng.integers(lo, hi, n)
    f = rng.integers(0, 1 << 23, n)
    k = rng.integers(0, 4, n)
    f = np.where(k == 0, (1 << 23) - 1 - rng.integers(0, 4, n), np.where(k == 1, rng.integers(0, 4, n), f))
    return ((rng.integers(0, 2, n) << 31) | ((e + 127) << 23) | f).astype(np.uint32)


@pytest.mark.parametrize("rnd", list(Rnd), ids=lambda r: r.value)
def test_emulated_fma_is_fp32_fma(rnd):
    """Random operands near 1, some with c = -RN(a b) (cancellation, exact zeros and their signs)."""
    rng = np.random.default_rng(7)
    n = 4000
    a, b = _patterns(rng, n, -3, 3), _patterns(rng, n, -3, 3)
    c = np.where(rng.integers(0, 2, n) == 0, _patterns(rng, n, -30, 3),
                 E.bits(-(E.floats(a) * E.floats(b)))).astype(np.uint32)
    got = E.bits(E.fma(E.floats(a), E.floats(b), E.floats(c), rnd))
    want = np.array([fp32.fma(int(x), int(y), int(z), rnd) for x, y, z in zip(a, b, c)], np.uint32)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# 2. the cores
# ---------------------------------------------------------------------------
def test_reciprocal_is_correctly_rounded_for_every_significand():
    assert P.reciprocal() == 0


def test_reciprocal_fix_up():
    """At m = 2 - 2**-23 the Newton steps end on 0.5 (y + y e is a tie there), which is not
    RN(1/m) = 0.5 + 2**-24 (Markstein's last step then rounds 1/m to 0.5); the sequence adds
    the missing ulp."""
    m = np.array([fmicro.ONE | fmicro.FRAC], np.uint32)
    y = P.reciprocal_core(-E.floats(m))
    assert E.bits(y)[0] == 0x3F00_0001
    ma = np.array([fmicro.ONE], np.uint32)
    assert all(P.division(ma, m)[r] == 0 for r in Rnd)


def test_square_root_core_in_every_mode():
    bad = P.sqrt(stride=4)
    assert bad == {**{r: 0 for r in Rnd}, "inexact": 0}


def test_division_core_random_pairs_and_a_slice():
    assert P.division_slices([], [], seed=3, random_pairs=1 << 19) == {r: 0 for r in Rnd}
    part = np.arange(0, 1 << 23, 64, dtype=np.uint32)          # every 64th dividend over 2 - 2**-23
    for sign in (0, 1):
        bad = P.division(P.significands(part, sign), P.significands(np.full_like(part, 0x7FFFFF)))
        assert bad == {r: 0 for r in Rnd}


def test_the_checkers_catch_one_ulp():
    rng = np.random.default_rng(1)
    fa, fb = rng.integers(0, 1 << 23, 4096, dtype=np.uint32), rng.integers(0, 1 << 23, 4096, dtype=np.uint32)
    a, b = P.significands(fa), P.significands(fb)
    for rnd in Rnd:
        q = P.division_core(a, b, rnd)
        for step in (1, -1):
            off = E.floats(E.bits(q) + np.uint32(step & 0xFFFF_FFFF))
            assert not P.rounded_quotient_ok(off, E.floats(a).astype(np.float64),
                                             E.floats(b).astype(np.float64), rnd).any()
    mxb = (np.arange(0, 1 << 24, 4099, dtype=np.uint32) & 0x00FF_FFFF) | fmicro.HALF
    for rnd in Rnd:
        s, _ = P.sqrt_core(mxb, rnd)
        m = E.floats(mxb).astype(np.float64)
        assert P.rounded_sqrt_ok(s, m, rnd).all()
        for step in (1, -1):
            off = E.floats(E.bits(s) + np.uint32(step & 0xFFFF_FFFF))
            assert not P.rounded_sqrt_ok(off, m, rnd).any()


# ---------------------------------------------------------------------------
# 3. the expansion on the interpreter
# ---------------------------------------------------------------------------
CUDA = r"""
#define K2(name, expr) extern "C" __global__ void name(const float *a, const float *b, float *out, int n) { \
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float x = a[i], y = b[i]; out[i] = expr; } }
K2(div_rn, __fdiv_rn(x, y)) K2(div_rz, __fdiv_rz(x, y)) K2(div_rd, __fdiv_rd(x, y)) K2(div_ru, __fdiv_ru(x, y))
K2(sqrt_rn, __fsqrt_rn(x)) K2(sqrt_rz, __fsqrt_rz(x)) K2(sqrt_rd, __fsqrt_rd(x)) K2(sqrt_ru, __fsqrt_ru(x))
K2(rcp_rn, __frcp_rn(y)) K2(rcp_rd, __frcp_rd(y))
extern "C" __global__ void atomics(const float *a, const float *b, float *out, int n)
{   // out[i] += a[i] in global memory, and the same sum in shared memory, in out[n + i]
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x, t = threadIdx.x;
    s[t] = b[i];
    __syncthreads();
    atomicAdd(&out[i], a[i]);
    float old = atomicAdd(&s[t], a[i]);
    out[n + i] = s[t];
    out[2 * n + i] = old;
}
extern "C" __global__ void generic(const float *a, float *out, int n)
{   // one atomicAdd through a pointer that is shared memory for odd threads, global for even ones
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = out[t];
    __syncthreads();
    float *p = (t & 1) ? &s[t] : &out[t];
    float old = atomicAdd(p, a[t]);
    __syncthreads();
    out[n + t] = s[t];
    out[2 * n + t] = old;
}
extern "C" __global__ void contended(const float *a, float *out)
{   // every thread adds to out[0] (global) and to a shared total; small integers: the sums are exact
    __shared__ float s;
    if (threadIdx.x == 0) s = 0.0f;
    __syncthreads();
    atomicAdd(&out[0], a[threadIdx.x]);
    atomicAdd(&s, a[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) out[1] = s;
}
"""
EDGES = [0, fp32.SIGN, fp32.POS_INF, fp32.NEG_INF, 0x7FC0_0000, 0xFFC0_0001, fp32.NAN, 1, 0x807F_FFFF, 0x0040_0000,
         0x0080_0000, 0x8080_0001, fp32.MAX_FINITE, 0xFF7F_FFFF, fp32.ONE, 0xBF80_0000, 0x3FFF_FFFF, 0x4040_0000,
         0x3EAA_AAAB, 0x0000_0003]


@functools.lru_cache(maxsize=None)
def module():
    return parse_ptx(compile_cuda(CUDA, filename="fmicro_ops.cu"))


def float_ops(program) -> set[str]:
    return {ins.op.name for b in program.blocks for ins in b.instrs if ins.op.kind is isa.Kind.FLOAT}


def operands(seed: int, n: int, root: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, then random patterns of every class, and pairs built to divide
    exactly, to overflow and to land on subnormal results (ties among them)."""
    rng = random.Random(seed)
    pairs = [(x, y) for x in EDGES for y in EDGES]
    if not root:    # subnormal ties: k 2**-149 / 2 for odd k, and (k 2**-149 * 3) / 6, both signs
        for k in (1, 3, 5, 7, 0x7FFFFF, 0xFFFFFF):
            for sign in (0, fp32.SIGN):
                pairs.append((sign | fp32.mul(k, fp32.ONE), 0x4000_0000))
                pairs.append((sign | fp32.mul(fp32.from_int(k, Rnd.RN, True), 0x0000_0003, Rnd.RN), 0x40C0_0000))

    def pattern():
        k = rng.random()
        if k < 0.2:
            return rng.getrandbits(32)
        if k < 0.35:
            return (rng.getrandbits(1) << 31) | rng.getrandbits(rng.randint(1, 23))          # subnormal
        field = rng.choice([rng.randint(1, 254), rng.randint(110, 144), rng.randint(1, 40), rng.randint(215, 254)])
        frac = rng.choice([rng.getrandbits(23), rng.getrandbits(4), (1 << 23) - 1 - rng.getrandbits(4)])
        return (rng.getrandbits(1) << 31) | (field << 23) | frac

    while len(pairs) < n:
        a, b = pattern(), pattern()
        kind = rng.randrange(4)
        if kind == 0 and not root:      # a = b * small integer (an exact quotient, maybe subnormal)
            a = fp32.mul(b, fp32.from_int(rng.randint(1, 99), Rnd.RN, True))
        elif kind == 1 and not root:    # quotients just under, at and below the subnormal range
            a = (a & 0x807F_FFFF) | (rng.randint(1, 30) << 23)
            b = (b & 0x807F_FFFF) | (rng.randint(120, 160) << 23)
        elif kind == 2 and not root:    # near overflow
            a = (a & 0x807F_FFFF) | (rng.randint(230, 254) << 23)
            b = (b & 0x807F_FFFF) | (rng.randint(90, 130) << 23)
        elif kind == 1 and root:        # perfect squares, and positive operands
            a = fp32.mul(b & fp32.MAGNITUDE, b & fp32.MAGNITUDE)
        elif root:
            a &= fp32.MAGNITUDE
        pairs.append((a, b))
    a, b = zip(*pairs[:n])
    return np.array(a, np.uint32), np.array(b, np.uint32)


def run(program, *arrays, n: int | None = None, block: int = 16):
    """The kernel over arrays (uint32 bit patterns, the last one written) in launches of 256 threads."""
    arrays = [np.asarray(x, np.uint32).copy() for x in arrays]
    n = len(arrays[0]) if n is None else n
    outs = []
    for i in range(0, n, 256):
        part = [x[i:i + 256].view(np.float32).copy() for x in arrays[:-1]] + [np.zeros(min(256, n - i), np.float32)]
        m = len(part[0])
        launch = Launch.build(program, (m // block, 1, 1), (block, 1, 1), [*part, np.int32(m)])
        interp.run(program, launch.grid, launch.block, launch.params, launch.memory)
        launch.copy_back()
        outs.append(part[-1].view(np.uint32))
    return np.concatenate(outs)


def reference(kernel: str):
    op, mode = kernel.split("_")
    rnd = MODES[mode]
    return {"div": lambda x, y: fp32.div(x, y, rnd), "sqrt": lambda x, y: fp32.sqrt(x, rnd),
            "rcp": lambda x, y: fp32.div(fp32.ONE, y, rnd)}[op]


@pytest.mark.parametrize("kernel", ["div_rn", "div_rz", "div_rd", "div_ru", "sqrt_rn", "sqrt_rz", "sqrt_rd",
                                    "sqrt_ru", "rcp_rn", "rcp_rd"])
def test_expansion_matches_fp32(kernel):
    plain = lower(module(), kernel)
    expanded = lower(module(), kernel, expand=MODEL_EXPANSIONS)
    op = "FSQRT" if kernel.startswith("sqrt") else "FDIV"
    assert op in float_ops(plain)
    assert not float_ops(expanded) & {"FDIV", "FSQRT"}
    a, b = operands(seed=len(kernel) + ord(kernel[-1]), n=3072, root=kernel.startswith("sqrt"))
    f = reference(kernel)
    want = np.array([f(int(x), int(y)) for x, y in zip(a, b)], np.uint32)
    np.testing.assert_array_equal(run(plain, a, b, b), want)
    got = run(expanded, a, b, b)
    bad = np.flatnonzero(got != want)
    assert not bad.size, [(hex(a[j]), hex(b[j]), hex(got[j]), hex(want[j])) for j in bad[:5]]
    if op == "FDIV":        # the slow paths ran: subnormal and zero results, overflow, special operands
        w = want & fp32.MAGNITUDE
        assert ((w > 0) & (w < fp32.HIDDEN)).sum() > 50
        assert (w == fp32.POS_INF).sum() > 50 or (w == fp32.MAX_FINITE).sum() > 50
        assert (w > fp32.POS_INF).sum() > 50


def test_constant_operands_fold():
    store = VInstr(isa.Op.ST, None, [isa.Imm(0), isa.Imm(0), 1], isa.Space.GLOBAL)
    blocks = [VBlock([VInstr(isa.Op.FDIV, 1, [isa.Imm(fp32.ONE), isa.Imm(0x4040_0000)], Rnd.RZ), store],
                     VTerm(isa.Term.EXIT))]
    expand_ops(blocks, {"FDIV"}, 1)
    [ins] = blocks[0].instrs
    assert ins.op is isa.Op.ST and ins.srcs[2] == isa.Imm(fp32.div(fp32.ONE, 0x4040_0000, Rnd.RZ))


def test_float_atomics_match_the_native_op():
    """Global memory flushes subnormal operands and results, shared memory keeps them; the
    returned old value is the word before the add."""
    expanded = lower(module(), "atomics", expand=MODEL_EXPANSIONS)
    assert not any(ins.op is isa.Op.ATOM and ins.mod[1] is isa.AtomOp.FADD for b in expanded.blocks for ins in b.instrs)
    plain = lower(module(), "atomics")
    rng = random.Random(9)
    n = 64
    subs = [1, 0x8000_0003, 0x0040_0000, 0x807F_FFFF, 0x0080_0000]
    a = np.array([rng.choice(subs + [rng.getrandbits(32) & 0xBFFF_FFFF]) for _ in range(n)], np.uint32)
    b = np.array([rng.choice(subs + [0, fp32.SIGN, rng.getrandbits(32) & 0xBFFF_FFFF]) for _ in range(n)], np.uint32)
    out0 = np.array([rng.choice(subs + [fp32.SIGN, rng.getrandbits(32) & 0xBFFF_FFFF]) for _ in range(n)], np.uint32)

    def launch(program):
        out = np.concatenate([out0, np.zeros(2 * n, np.uint32)]).view(np.float32)
        args = [a.view(np.float32).copy(), b.view(np.float32).copy(), out, np.int32(n)]
        lau = Launch.build(program, (n // 16, 1, 1), (16, 1, 1), args)
        interp.run(program, lau.grid, lau.block, lau.params, lau.memory)
        lau.copy_back()
        return out.view(np.uint32)
    got, native = launch(expanded), launch(plain)
    np.testing.assert_array_equal(got, native)
    want = [fp32.add(int(o), int(x), ftz=True) for o, x in zip(out0, a)]
    want += [fp32.add(int(y), int(x)) for y, x in zip(b, a)] + [int(y) for y in b]
    np.testing.assert_array_equal(got, np.array(want, np.uint32))
    assert any(fp32.add(int(o), int(x), ftz=True) != fp32.add(int(o), int(x)) for o, x in zip(out0, a))


def test_generic_float_atomics_flush_only_in_global_memory():
    """A generic address the translator resolves at run time (windowed mode: one ATOM a space);
    each expands with its own space's rule."""
    plain = lower(module(), "generic")
    spaces = {ins.mod[0] for b in plain.blocks for ins in b.instrs if ins.op is isa.Op.ATOM}
    assert spaces == {isa.Space.GLOBAL, isa.Space.SHARED}
    expanded = lower(module(), "generic", expand=MODEL_EXPANSIONS)
    n = 16
    a = np.array([1, 0x8000_0005, 0x0040_0000, 0x3F80_0000] * 4, np.uint32)
    out0 = np.array([0x0000_0002, 0x0000_0002, 0x8040_0000, 0x8040_0000] * 4, np.uint32)

    def launch(program):
        out = np.concatenate([out0, np.zeros(2 * n, np.uint32)]).view(np.float32)
        lau = Launch.build(program, (1, 1, 1), (n, 1, 1), [a.view(np.float32).copy(), out, np.int32(n)])
        interp.run(program, lau.grid, lau.block, lau.params, lau.memory)
        lau.copy_back()
        return out.view(np.uint32)
    got = launch(expanded)
    np.testing.assert_array_equal(got, launch(plain))
    even = [fp32.add(int(o), int(x), ftz=True) for o, x in zip(out0[0::2], a[0::2])]
    odd = [fp32.add(int(o), int(x)) for o, x in zip(out0[1::2], a[1::2])]
    assert got[0:n:2].tolist() == even and got[n + 1:2 * n:2].tolist() == odd
    assert even != [fp32.add(int(o), int(x)) for o, x in zip(out0[0::2], a[0::2])]     # the rule mattered


def test_contended_float_atomics():
    expanded = lower(module(), "contended", expand=MODEL_EXPANSIONS)
    vals = np.arange(1, 17, dtype=np.float32) * np.float32(0.5)
    out = np.array([3.0, 0.0], np.float32)
    lau = Launch.build(expanded, (1, 1, 1), (16, 1, 1), [vals, out])
    interp.run(expanded, lau.grid, lau.block, lau.params, lau.memory)
    lau.copy_back()
    assert out.tolist() == [3.0 + vals.sum(), vals.sum()]


# ---------------------------------------------------------------------------
# 3b. shared subroutines: FDIV and FSQRT as one copy each, called from every use
# ---------------------------------------------------------------------------
SHARED_CUDA = r"""
extern "C" __global__ void multi(const float *a, const float *b, float *out)
{   // every division mode, reciprocals and roots in one thread: one FDIV and one FSQRT subroutine
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i], y = b[i], *o = out + 8 * i;
    o[0] = __fdiv_rn(x, y); o[1] = __fdiv_rz(y, x); o[2] = __fdiv_rd(x, y); o[3] = __fdiv_ru(x, y);
    o[4] = __frcp_rn(y); o[5] = __fsqrt_rz(x); o[6] = __fsqrt_ru(y); o[7] = __fdiv_rn(o[0], o[3]);
}
extern "C" __global__ void same_mode(const float *a, const float *b, float *out)
{   // calls that all round to nearest: the subroutine's mode is a constant
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i], y = b[i];
    out[3 * i] = x / y; out[3 * i + 1] = y / x; out[3 * i + 2] = __frcp_rn(x);
}
extern "C" __global__ void branchy(const float *a, const float *b, float *out)
{   // calls on both sides of divergent branches, a barrier between them
    __shared__ float s[16];
    int i = blockIdx.x * blockDim.x + threadIdx.x, t = threadIdx.x;
    float x = a[i], y = b[i], r;
    if (t & 1) r = __fdiv_rz(x, y); else r = __fdiv_ru(y, x);
    s[t] = r;
    __syncthreads();
    float u = s[t ^ 1];
    out[2 * i] = r;
    out[2 * i + 1] = (t & 2) ? __fdiv_rd(u, y) : __fsqrt_rn(u);
}
"""


@functools.lru_cache(maxsize=None)
def shared_module():
    return parse_ptx(compile_cuda(SHARED_CUDA, filename="fmicro_shared.cu"))


def shared_reference(kernel: str, x: int, y: int) -> list[int]:
    d, q = fp32.div, fp32.sqrt
    if kernel == "multi":
        o0, o3 = d(x, y, Rnd.RN), d(x, y, Rnd.RP)
        return [o0, d(y, x, Rnd.RZ), d(x, y, Rnd.RM), o3, d(fp32.ONE, y, Rnd.RN), q(x, Rnd.RZ), q(y, Rnd.RP),
                d(o0, o3, Rnd.RN)]
    return [d(x, y, Rnd.RN), d(y, x, Rnd.RN), d(fp32.ONE, x, Rnd.RN)]


def run_out(program, a, b, per: int, block: int = 16) -> np.ndarray:
    """program over (a, b) in launches of 96 threads, `per` output words a thread."""
    outs = []
    for i in range(0, len(a), 96):
        x, y = a[i:i + 96].view(np.float32).copy(), b[i:i + 96].view(np.float32).copy()
        out = np.zeros(per * len(x), np.float32)
        launch = Launch.build(program, (len(x) // block, 1, 1), (block, 1, 1), [x, y, out])
        interp.run(program, launch.grid, launch.block, launch.params, launch.memory)
        launch.copy_back()
        outs.append(out.view(np.uint32))
    return np.concatenate(outs)


def seed_ffmas(program) -> int:
    """How many copies of the division's reciprocal seed the program holds."""
    return sum(ins.op is isa.Op.FFMA and isa.Imm(fmicro.RCP_C1) in ins.srcs for b in program.blocks for ins in b.instrs)


def lower_any_size(monkeypatch, kernel: str, share: str):
    """The kernel at a share level, over the ROM or not: the interpreter runs programs of any
    size, and these check the sequences' results (lower's level choice is tested below)."""
    monkeypatch.setattr(isa, "check_program", lambda p: None)
    return lower(shared_module(), kernel, expand=MODEL_EXPANSIONS, share=share)


@pytest.mark.parametrize("share", ["rare", "all"])
@pytest.mark.parametrize("kernel,per", [("multi", 8), ("same_mode", 3)])
def test_shared_subroutines_match_fp32(kernel, per, share, monkeypatch):
    """Several calls of one subroutine, in every mode (a register) or one (a constant), on
    operands where neighbouring lanes take the rare paths (special, subnormal, overflowing)
    while others take the fast path: "rare" calls the subroutine from a divergent branch
    after each inline fast path, "all" calls it for every use."""
    program = lower_any_size(monkeypatch, kernel, share)
    inline = lower_any_size(monkeypatch, kernel, "inline")
    divisions = 6 if kernel == "multi" else 3
    assert seed_ffmas(inline) == divisions and len(program.blocks) < len(inline.blocks)
    assert seed_ffmas(program) == (1 if share == "all" else divisions + 1)
    a, b = operands(seed=11 + per, n=96 * 16, root=False)
    want = np.array([w for x, y in zip(a, b) for w in shared_reference(kernel, int(x), int(y))], np.uint32)
    got = run_out(program, a, b, per)
    bad = np.flatnonzero(got != want)
    assert not bad.size, [(hex(a[j // per]), hex(b[j // per]), j % per, hex(got[j]), hex(want[j])) for j in bad[:5]]
    np.testing.assert_array_equal(run_out(inline, a, b, per), want)


@pytest.mark.parametrize("share", ["rare", "all"])
def test_shared_subroutines_in_divergent_code(share, monkeypatch):
    """Calls inside both sides of a divergent branch and after a barrier: a branch around a
    call reconverges where it would around the inline code (blocks.set_reconvergence), so
    the barrier sees every lane and each lane comes back to its own call."""
    program = lower_any_size(monkeypatch, "branchy", share)
    assert seed_ffmas(program) == (1 if share == "all" else 4)
    a, b = operands(seed=5, n=96 * 8, root=False)
    got = run_out(program, a, b, 2)
    want = []
    for g in range(0, len(a), 16):
        xs, ys = [int(v) for v in a[g:g + 16]], [int(v) for v in b[g:g + 16]]
        r = [fp32.div(x, y, Rnd.RZ) if t & 1 else fp32.div(y, x, Rnd.RP) for t, (x, y) in enumerate(zip(xs, ys))]
        for t in range(16):
            u = r[t ^ 1]
            want += [r[t], fp32.div(u, ys[t], Rnd.RM) if t & 2 else fp32.sqrt(u, Rnd.RN)]
    np.testing.assert_array_equal(got, np.array(want, np.uint32))


def test_only_kernels_over_the_rom_share():
    """lower() keeps the inline expansion where it fits (the fast path has no call overhead),
    shares the rare paths where that fits, and shares everything where nothing else does."""
    assert lower(shared_module(), "same_mode", expand=MODEL_EXPANSIONS).blocks == \
        lower(shared_module(), "same_mode", expand=MODEL_EXPANSIONS, share="inline").blocks
    assert lower(shared_module(), "multi", expand=MODEL_EXPANSIONS).blocks == \
        lower(shared_module(), "multi", expand=MODEL_EXPANSIONS, share="all").blocks   # "rare": 144 blocks
    src = 'extern "C" __global__ void k(const float *a, const float *b, float *o) { int i = threadIdx.x; ' + \
        " ".join(f"o[8 * i + {j}] = a[8 * i + {j}] / b[8 * i + {j}];" for j in range(6)) + " }"
    six = parse_ptx(compile_cuda(src, filename="six.cu"))                      # inline: 157 blocks
    assert lower(six, "k", expand=MODEL_EXPANSIONS).blocks == lower(six, "k", expand=MODEL_EXPANSIONS, share="rare").blocks
    with pytest.raises(MachineLimitError, match="ROM blocks"):
        lower(six, "k", expand=MODEL_EXPANSIONS, share="inline")
    case = next(c for c in FLOAT_CASES if c.name == "fround_modes")
    mod = parse_ptx(compile_cuda(case.source.read_text(), filename=case.source.name))
    program = lower(mod, suite.load_spec(case).KERNEL, expand=MODEL_EXPANSIONS)
    assert seed_ffmas(program) == 1 and len(program.blocks) <= isa.ROM_BLOCKS


# ---------------------------------------------------------------------------
# 4. the float suite with the model engine's expansions
# ---------------------------------------------------------------------------
FLOAT_CASES = [c for c in suite.discover(suite.DEFAULT_DIR / "float")]


def _uses(case) -> bool:
    spec = suite.load_spec(case)
    prog = lower(parse_ptx(compile_cuda(case.source.read_text(), filename=case.source.name)), spec.KERNEL)
    return any(ins.op in (isa.Op.FDIV, isa.Op.FSQRT) or (ins.op is isa.Op.ATOM and ins.mod[1] is isa.AtomOp.FADD)
               for b in prog.blocks for ins in b.instrs)


MICRO_CASES = [c for c in FLOAT_CASES if _uses(c)]


def test_the_float_suite_uses_the_expanded_ops():
    names = {c.name for c in MICRO_CASES}
    assert {"layernorm", "nbody", "softmax", "fmathfns", "fround_modes", "fatomic_hist"} <= names


@pytest.mark.parametrize("case", MICRO_CASES, ids=lambda c: c.name)
def test_float_suite_kernel_with_expansion(case):
    device = api.Device("interp", micro_code=True)          # the model engine's programs
    report = suite.run_case(case, device)
    assert report.passed, report.reason
    program = device.compile(case.source.read_text(), filename=case.source.name).get_function(report.kernel).program
    assert not float_ops(program) & {"FDIV", "FSQRT"}
    assert not any(ins.op is isa.Op.ATOM and ins.mod[1] is isa.AtomOp.FADD for b in program.blocks for ins in b.instrs)


@pytest.mark.parametrize("share", ["rare", "all"])
@pytest.mark.parametrize("case", [c for c in MICRO_CASES if c.name != "fatomic_hist"], ids=lambda c: c.name)
def test_float_suite_kernel_with_shared_subroutines(case, share, monkeypatch):
    """The same kernels with FDIV and FSQRT as shared subroutines, as a kernel too big for them
    inline gets them: calls in loops (nbody, softmax), after barriers (layernorm), in every mode."""
    monkeypatch.setattr(isa, "check_program", lambda p: None)     # fround_modes: 197 blocks with "rare"
    monkeypatch.setattr(api, "lower", lambda module, name, expand=(): lower(module, name, expand=MODEL_EXPANSIONS,
                                                                          share=share))
    device = api.Device("interp")
    report = suite.run_case(case, device)
    assert report.passed, report.reason
    program = device.compile(case.source.read_text(), filename=case.source.name).get_function(report.kernel).program
    assert not float_ops(program) & {"FDIV", "FSQRT"}
    if share == "all":
        assert seed_ffmas(program) <= 1


def test_micro_code_option_lowers_as_the_model_engine():
    """Device(micro_code=True) and `qgpu suite --micro-code`: the model engine's programs on the
    interpreter."""
    plain = api.Device("interp").compile(CUDA, filename="f.cu").get_function("div_rn").program
    micro = api.Device("interp", micro_code=True).compile(CUDA, filename="f.cu").get_function("div_rn").program
    assert "FDIV" in float_ops(plain) and "FDIV" not in float_ops(micro)
    args = ["suite", "--engine", "interp", "--dir", str(suite.DEFAULT_DIR / "float"), "-k", "layernorm", "--json"]
    out = [CliRunner().invoke(app, args + flag) for flag in ([], ["--micro-code"])]
    assert all(r.exit_code == 0 for r in out), [r.output for r in out]
    counts = [json.loads(r.output)["kernels"][0]["instructions"] for r in out]
    assert counts[1] > counts[0]            # the expanded division and root ran
