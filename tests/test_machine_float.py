"""Float ops on the model engine (issue 32): FADD, FSUB, FMUL, I2F, U2F, F2I, F2U, FRND, FMIN, FMAX and
FSET run in the circuit's FPU (qwengpu/machine/fpu.py, L14-L25, its result written back like an ALU op's).
First the host side, no model: the instruction word's rounding mode, a float op never in the
pre-ALU, fixed operands, what the model engine accepts and refuses. Then float kernels on the
stand-in merged model with replay (every generated token against the interpreter's stream),
their outputs against the interpreter's and an independent reference (NumPy's float32 for
round-to-nearest, MPFR through gmpy2 for the directed modes, CUDA's documented rules written out
with NumPy for the comparisons and conversions)."""
import copy

import gmpy2
import numpy as np
import pytest

from qwengpu import api, interp, isa
from qwengpu.api import Device
from qwengpu.errors import UnsupportedError
from qwengpu.isa import Imm, Instr, MachineBlock, Op, Param, Program, Reg, Rnd, Space, Term, Terminator
from qwengpu.launch import Launch
from qwengpu.driver import runtime
from qwengpu.machine.build import MODEL_OPS
from qwengpu.machine.encoding import (FPU_OPERAND_OPS, Fixed, block_passes, encode, fits_pre_alu, instr_words,
                                      machine_blocks)
from qwengpu.machine.fpu import FPU_OPCODES, ROUNDED_OPS, ROUNDINGS
from qwengpu.machine.words import OPCODES, ROM0
from qwengpu.suite import DEFAULT_DIR, discover, load_spec, mismatches

FLOAT_DIR = DEFAULT_DIR / "float"
FRONTENDS = ("clang", "nvrtc")
r = Reg
EXIT = Terminator(Term.EXIT)

# FADD, FSUB, FMUL in the four modes (rn through the operators), a thread an (x, y) pair
FPU_MODES = r"""
extern "C" __global__ void fpu_modes(const float *a, const float *b, float *out)
{
    int t = threadIdx.x;
    float x = a[t], y = b[t];
    float *o = out + 12 * t;
    o[0] = x + y;  o[1] = __fadd_rz(x, y);  o[2] = __fadd_rd(x, y);  o[3] = __fadd_ru(x, y);
    o[4] = x - y;  o[5] = __fsub_rz(x, y);  o[6] = __fsub_rd(x, y);  o[7] = __fsub_ru(x, y);
    o[8] = x * y;  o[9] = __fmul_rz(x, y);  o[10] = __fmul_rd(x, y); o[11] = __fmul_ru(x, y);
}
"""
# each pair's results differ by mode somewhere: inexact sums both signs, an overflow (inf or
# FLT_MAX by mode), an exact zero difference (-0 in rd only), a subnormal product, a tie
PAIRS = [(1.0, 3 * 2.0**-25), (-1.0, -3 * 2.0**-25), (3.0, 1 / 3), (3e38, 3e38),
         (1.5, 1.5), (2.0**-130, 0.75), (1.0, 2.0**-24), (-7.25, 0.1)]
MPFR_ROUND = {"rn": gmpy2.RoundToNearest, "rz": gmpy2.RoundToZero, "rd": gmpy2.RoundDown, "ru": gmpy2.RoundUp}
FDIV = r"""
extern "C" __global__ void fdiv(const float *a, const float *b, float *out)
{
    int t = threadIdx.x;
    out[t] = a[t] / b[t];
}
"""


def float_ops(program: isa.Program) -> set[str]:
    return {ins.op.name for b in program.blocks for ins in b.instrs if ins.op.kind is isa.Kind.FLOAT}


# ---- host side ------------------------------------------------------------------------------------
def test_the_model_engine_takes_the_fpus_ops():
    assert set(FPU_OPCODES) == {"FADD", "FSUB", "FMUL", "FFMA", "I2F", "U2F", "F2I", "F2U", "FRND", "FMIN", "FMAX",
                                "FSET"}
    assert set(FPU_OPCODES) <= MODEL_OPS
    assert ROUNDINGS == tuple(m.name for m in Rnd)
    assert all(isa.FLOAT_MODS[op] is Rnd for op in ROUNDED_OPS)
    others = {op.name for op in isa.Op if op.kind is isa.Kind.FLOAT} - set(FPU_OPCODES)
    assert others == {"FDIV", "FSQRT"} and not others & MODEL_OPS


@pytest.mark.parametrize("op", ROUNDED_OPS + ("FSET",))
def test_the_mode_is_in_rom0_mod(op):
    """The rounding mode's index in isa.Rnd, FSET's comparison's in isa.FCmp."""
    arity = Op[op].arity
    for i, mode in enumerate(isa.FCmp if op == "FSET" else Rnd):
        word = instr_words(Instr(Op[op], r(3), (r(1), r(2), r(4))[:arity], mode))[0]
        bits = lambda name: word >> ROM0[name].offset & (1 << ROM0[name].width) - 1   # noqa: E731
        regs = (bits("a"), bits("b"), bits("c"))[:arity]
        assert (bits("op"), bits("mod"), bits("dst"), *regs) == (OPCODES.index(op), i, 3, 1, 2, 4)[:3 + arity]


def test_a_float_op_is_never_a_pairs_first_instruction():
    """FMUL's result only the next instruction reads: an ALU op there would run in the pre-ALU,
    the FMUL runs in a pass of its own. An ALU op whose result only the FMUL reads pairs with it
    (forwarded into the FMUL's operands, which the FPU reads)."""
    fmul = Instr(Op.FMUL, r(3), (r(1), r(2)), Rnd.RN)
    assert not fits_pre_alu(fmul)
    st = Instr(Op.ST, r(0), (r(4), Imm(0), r(3)), Space.GLOBAL)
    block = MachineBlock([fmul, st], EXIT)
    assert [(p.pre, p.main) for p in block_passes(block, set())] == [(None, 0), (None, 1)]
    add = Instr(Op.ADD, r(1), (r(1), Imm(1)))
    block = MachineBlock([add, fmul, st], EXIT)
    assert [(p.pre, p.main) for p in block_passes(block, set())] == [(0, 1), (None, 2)]


def test_a_float_op_takes_fixed_operands():
    """A parameter (a CONST load) read by an FMUL and an FADD is read from the parameter bank:
    the load runs in no pass."""
    assert tuple(op.name for op in FPU_OPERAND_OPS) == FPU_OPCODES   # encoding.py names them itself
    ldc = Instr(Op.LD, r(1), (Imm(0), Imm(0)), Space.CONST)
    blocks = [MachineBlock([ldc, Instr(Op.FMUL, r(2), (r(1), r(1)), Rnd.RZ),
                            Instr(Op.FADD, r(3), (r(2), r(1)), Rnd.RP),
                            Instr(Op.ST, r(0), (Imm(0), Imm(0), r(3)), Space.GLOBAL)], EXIT)]
    program = Program("k", blocks, [Param("p0", 0)])
    [(block, kept)] = machine_blocks(program)
    assert kept == (1, 2, 3)
    assert block.instrs[0].srcs == (Fixed(word=0), Fixed(word=0))
    assert block.instrs[1].srcs == (r(2), Fixed(word=0))
    assert [(p.pre, p.main) for p in encode(program)[0].passes] == [(None, 1), (None, 2), (None, 3)]


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_fdot_lowers_to_fmul_and_fadd_alone(frontend):
    [case] = [c for c in discover(FLOAT_DIR) if c.name == "fdot"]
    fn = Device("model", frontend).compile(case.source.read_text(), filename=case.source.name).get_function("fdot")
    assert float_ops(fn.program) == {"FMUL", "FADD"}
    api.check_model_ops(fn.program)                       # no refusal


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_the_modes_kernel_lowers_to_the_fpus_ops(frontend):
    fn = Device("model", frontend).compile(FPU_MODES).get_function("fpu_modes")
    assert float_ops(fn.program) == {"FADD", "FSUB", "FMUL"}
    mods = {(ins.op.name, ins.mod) for b in fn.program.blocks for ins in b.instrs if ins.op.kind is isa.Kind.FLOAT}
    assert mods == {(op, m) for op in ("FADD", "FSUB", "FMUL") for m in Rnd}
    api.check_model_ops(fn.program)


def test_fdiv_is_micro_coded():
    """The model engine's lowering expands FDIV (toolchain/fmicro.py) into ops the model has, FFMA
    among them; the interpreter's program keeps FDIV, which the model refuses by name."""
    fn = Device("model").compile(FDIV).get_function("fdiv")
    assert "FDIV" not in float_ops(fn.program) and "FFMA" in float_ops(fn.program)
    api.check_model_ops(fn.program)                       # no refusal
    plain = Device("interp").compile(FDIV).get_function("fdiv").program
    assert "FDIV" in float_ops(plain)
    with pytest.raises(UnsupportedError, match=r"kernel fdiv uses FDIV, which the model engine does not support "
                                               r"yet; use engine='interp'"):
        api.check_model_ops(plain)


# ---- the references ---------------------------------------------------------------------------------
def mpfr_f32(op, x, y, mode: str) -> np.float32:
    """x op y rounded to float32 in `mode` by MPFR (24 bits, float32's exponent range, subnormals)."""
    ctx = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True, round=MPFR_ROUND[mode])
    with gmpy2.context(ctx):
        z = gmpy2.check_range(op(gmpy2.mpfr(float(x)), gmpy2.mpfr(float(y))))
    return np.float32(float(z))


def modes_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = []
    with np.errstate(over="ignore"):
        for x, y in zip(a, b):
            for op, numpy_op in ((gmpy2.add, np.add), (gmpy2.sub, np.subtract), (gmpy2.mul, np.multiply)):
                rn = numpy_op(x, y, dtype=np.float32)
                assert same_bits(rn, mpfr_f32(op, x, y, "rn"))
                out += [rn] + [mpfr_f32(op, x, y, m) for m in ("rz", "rd", "ru")]
    return np.array(out, np.float32)


def same_bits(x, y) -> bool:
    return np.float32(x).view(np.uint32) == np.float32(y).view(np.uint32)


def on_interp(program: isa.Program, grid, block, args) -> list:
    args = copy.deepcopy(list(args))
    lau = Launch.build(program, grid, block, args)
    interp.run_launch(lau)
    lau.copy_back()
    return args


def test_the_references_agree_on_interp():
    """The modes kernel's interpreter run against MPFR (and NumPy), before the model's."""
    a, b = (np.array(v, np.float32) for v in zip(*PAIRS))
    want = modes_reference(a, b)
    assert len({tuple(want[12 * t + 4 * k: 12 * t + 4 * k + 4].view(np.uint32)) for t in range(8)
                for k in range(3)}) > 12                     # the modes differ somewhere
    assert same_bits(want[12 * 3 + 0], np.inf) and same_bits(want[12 * 3 + 1], np.finfo(np.float32).max)
    assert same_bits(want[12 * 4 + 6], -0.0) and same_bits(want[12 * 4 + 4], 0.0)
    fn = Device("model").compile(FPU_MODES).get_function("fpu_modes")
    got = on_interp(fn.program, 1, 8, [a, b, np.zeros(96, np.float32)])[2]
    assert mismatches([got], [want], ["out"]) == []


# ---- in the model ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model(standin_fast):
    return standin_fast


def run_on_model(model, program, grid, block, args) -> runtime.ModelRun:
    fast, machine = model
    lau = Launch.build(program, grid, block, args)
    run = runtime.launch_on_model(fast, machine, lau, max_tokens=5000, check="replay")
    lau.copy_back()
    return run


def test_fdot_in_the_model(model):
    """kernels/float/fdot: 1.5*4 + 2*5 + 3*6.25 = 34.75 (FMUL, FADD in rn)."""
    [case] = [c for c in discover(FLOAT_DIR) if c.name == "fdot"]
    spec = load_spec(case)
    grid, block, args = spec.launch()
    want = spec.reference(*copy.deepcopy(list(args)))
    assert want[2].tolist() == [34.75]
    fn = Device("model").compile(case.source.read_text(), filename=case.source.name).get_function(spec.KERNEL)
    assert on_interp(fn.program, grid, block, args)[2].tolist() == [34.75]
    got = copy.deepcopy(list(args))
    run = run_on_model(model, fn.program, grid, block, got)
    assert run.stream[-1].kind == "HALT"
    assert mismatches(got, want, fn.arg_names) == []
    assert got[2].tolist() == [34.75]


def test_every_rounding_mode_in_the_model(model):
    a, b = (np.array(v, np.float32) for v in zip(*PAIRS))
    want = modes_reference(a, b)
    fn = Device("model").compile(FPU_MODES).get_function("fpu_modes")
    assert mismatches([on_interp(fn.program, 1, 8, [a, b, np.zeros(96, np.float32)])[2]], [want], ["out"]) == []
    out = np.zeros(96, np.float32)
    run_on_model(model, fn.program, 1, 8, [a, b, out])
    assert mismatches([out], [want], ["out"]) == []


# FMIN, FMAX, FSET (ordered and unordered), I2F in rn and U2F in rz, a thread a case
COMPARE_CONVERT = r"""
extern "C" __global__ void compare_convert(const float *a, const float *b, const int *n, const unsigned *u,
                                           float *out, int *flags)
{
    int i = threadIdx.x;
    float x = a[i], y = b[i];
    out[4 * i] = fminf(x, y);
    out[4 * i + 1] = fmaxf(x, y);
    out[4 * i + 2] = (float)n[i];
    out[4 * i + 3] = __uint2float_rz(u[i]);
    flags[i] = (x < y) | (x == y) << 1 | (x >= y) << 2 | (x != y) << 3;
}
"""
NAN_BITS = 0x7FFF_FFFF                    # CUDA's canonical NaN (two NaN operands of fminf/fmaxf)
CC_CASES = [(1.0, 2.0, -1, 0xFFFF_FFFF), (0.0, -0.0, 16_777_217, 16_777_217), (np.nan, 3.0, -2 ** 31, 2 ** 31 + 1),
            (-np.inf, np.nan, 7, 0), (np.nan, np.nan, 2 ** 31 - 1, 123_456_789), (-5.5, -5.5, 0, 1),
            (-1e-45, 1e-45, -16_777_219, 33_554_435), (np.inf, 3.4e38, 100, 0x8000_0001)]


def compare_convert_reference(a, b, n, u):
    """CUDA's rules written out (fminf/fmaxf: one NaN gives the other, two the canonical NaN, -0 < +0;
    C's comparisons; int -> float by NumPy's cast (round to nearest even), uint -> float toward zero
    by clearing the bits below 24 significant ones)."""
    out, flags = [], []
    for x, y, k, v in zip(a, b, n, u):
        for pick_min in (True, False):
            if np.isnan(x) and np.isnan(y):
                out.append(np.uint32(NAN_BITS).view(np.float32))
            elif np.isnan(x) or np.isnan(y):
                out.append(y if np.isnan(x) else x)
            elif x == y == 0:
                out.append(np.float32(-0.0 if (np.signbit(x) or np.signbit(y)) == pick_min else 0.0)
                           if np.signbit(x) != np.signbit(y) else x)
            else:
                out.append(min(x, y) if pick_min else max(x, y))
        out.append(np.float32(np.int64(k)))
        v = int(v)
        drop = max(0, v.bit_length() - 24)
        out.append(np.float32(v >> drop << drop))
        flags.append(int(x < y) | int(x == y) << 1 | int(x >= y) << 2 | int(x != y) << 3)
    return np.array(out, np.float32), np.array(flags, np.int32)


def compare_convert_args():
    a, b, n, u = zip(*CC_CASES)
    return [np.array(a, np.float32), np.array(b, np.float32), np.array(n, np.int32), np.array(u, np.uint32),
            np.zeros(32, np.float32), np.zeros(8, np.int32)]


def test_compare_and_convert_in_the_model(model):
    args = compare_convert_args()
    want_out, want_flags = compare_convert_reference(*args[:4])
    fn = Device("model").compile(COMPARE_CONVERT).get_function("compare_convert")
    assert float_ops(fn.program) >= {"FMIN", "FMAX", "FSET", "I2F", "U2F"}
    want = [None] * 4 + [want_out, want_flags]
    assert mismatches(on_interp(fn.program, 1, 8, args), want, fn.arg_names) == []
    got = copy.deepcopy(args)
    run_on_model(model, fn.program, 1, 8, got)
    assert mismatches(got, want, fn.arg_names) == []


# F2I, F2U in the four modes and FRND through the rounding functions (roundf: FRND and FADD), a thread an input
TO_INTEGRAL = r"""
extern "C" __global__ void to_integral(const float *x, int *ints, unsigned *uints, float *rounded)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[t];
    ints[4 * t] = __float2int_rn(v);   ints[4 * t + 1] = __float2int_rz(v);
    ints[4 * t + 2] = __float2int_rd(v); ints[4 * t + 3] = __float2int_ru(v);
    uints[4 * t] = __float2uint_rn(v);   uints[4 * t + 1] = __float2uint_rz(v);
    uints[4 * t + 2] = __float2uint_rd(v); uints[4 * t + 3] = __float2uint_ru(v);
    rounded[5 * t] = rintf(v);      rounded[5 * t + 1] = floorf(v); rounded[5 * t + 2] = ceilf(v);
    rounded[5 * t + 3] = truncf(v); rounded[5 * t + 4] = roundf(v);
}
"""
# ties on both sides of 0, -0.5 (-0 or -1 by mode), -0, subnormals, the saturation edges 2**31 - 128,
# 2**31, -2**31, -2**31 - 256, 2**32 - 256, 2**32, infinities, NaN, 2**23 - 0.5 and 2**23 + 1
TI_CASES = [0.5, -0.5, 1.5, -2.5, 2.7, -2.7, -0.0, 1e-40, -1e-40, 0.75, 2147483520.0, 2147483648.0, -2147483648.0,
            -2147483904.0, 4294967040.0, 4294967296.0, 3e9, 8388607.5, 8388609.0, -8388607.5, np.inf, -np.inf, np.nan,
            -0.25]


def to_integral_reference(x):
    """CUDA's rules written out with NumPy, in float64 (which holds every float32 and the integers of
    these exactly): __float2int_r{n,z,d,u} and __float2uint_* are rint (ties to even), trunc, floor,
    ceil, clamped to the destination's range, NaN -> 0 (PTX cvt.rni etc.: saturating); rintf, floorf,
    ceilf, truncf keep the sign of a zero result and give NaN for NaN (CUDA's canonical 0x7FFFFFFF);
    roundf rounds halves away from zero."""
    ints, uints, rounded = [], [], []
    canonical = np.uint32(NAN_BITS).view(np.float32)
    for v in np.asarray(x, np.float64):
        for f in (np.rint, np.trunc, np.floor, np.ceil):
            n = 0.0 if np.isnan(v) else f(v)
            ints.append(int(np.clip(n, -2.0 ** 31, 2.0 ** 31 - 1)))
            uints.append(int(np.clip(n, 0, 2.0 ** 32 - 1)))
        half_away = np.copysign(np.floor(np.abs(v) + 0.5), v)
        for n in (np.rint(v), np.floor(v), np.ceil(v), np.trunc(v), half_away):
            rounded.append(canonical if np.isnan(v) else np.float32(n))
    return (np.array(ints, np.int64).astype(np.int32), np.array(uints, np.uint64).astype(np.uint32),
            np.array(rounded, np.float32))


def test_float_to_integer_in_the_model(model):
    x = np.array(TI_CASES, np.float32)
    n = len(x)
    args = [x, np.zeros(4 * n, np.int32), np.zeros(4 * n, np.uint32), np.zeros(5 * n, np.float32)]
    want = [None, *to_integral_reference(x)]
    assert want[1][[4 * 11, 4 * 12 + 1, 4 * 1 + 2, 4 * 22]].tolist() == [2 ** 31 - 1, -2 ** 31, -1, 0]
    assert same_bits(want[3][5 * 1], -0.0) and same_bits(want[3][5 * 1 + 4], -1.0)    # rintf, roundf(-0.5)
    fn = Device("model").compile(TO_INTEGRAL).get_function("to_integral")
    assert float_ops(fn.program) >= {"F2I", "F2U", "FRND"}
    api.check_model_ops(fn.program)
    assert mismatches(on_interp(fn.program, 2, 12, args), want, fn.arg_names) == []
    got = copy.deepcopy(args)
    run = run_on_model(model, fn.program, 2, 12, got)
    assert run.stream[-1].kind == "HALT"
    assert mismatches(got, want, fn.arg_names) == []


# FFMA in the four modes (fmaf and __fmaf_r*), a thread an (x, y, z) triple
FMA_MODES = r"""
extern "C" __global__ void fma_modes(const float *a, const float *b, const float *c, float *out)
{
    int t = threadIdx.x;
    float x = a[t], y = b[t], z = c[t];
    float *o = out + 4 * t;
    o[0] = fmaf(x, y, z);  o[1] = __fmaf_rz(x, y, z);  o[2] = __fmaf_rd(x, y, z);  o[3] = __fmaf_ru(x, y, z);
}
"""
# the FACTS counterexample (one rounding: 0x3F800001, two give 0x3F800002), massive cancellation
# ((1 + u)**2 - (1 + 2u) = u**2), an exact zero (-0 in rd only), c far below and far above the
# product, a subnormal result, overflow (inf or FLT_MAX by mode), inf * 0 + 1 (NaN)
FMA_TRIPLES = [(0x3380_0020, 0x3F7F_FFC0, 0x3F80_0001), (0x3F80_0001, 0x3F80_0001, 0xBF80_0002),
               (0x3F80_0000, 0x4040_0000, 0xC040_0000), (0x3F80_0000, 0x3F80_0000, 0x8000_0001),
               (0x3380_0000, 0x3380_0000, 0x4B80_0001), (0x0080_0000, 0x3F00_0000, 0x8000_0003),
               (0x7F7F_FFFF, 0x4000_0000, 0x3F80_0000), (0x7F80_0000, 0x0000_0000, 0x3F80_0000)]


def fma_reference(a, b, c) -> np.ndarray:
    """MPFR's fma (the exact a * b + c rounded once) to float32 in each mode; NaN as CUDA's canonical."""
    out = []
    for x, y, z in zip(a, b, c):
        for mode in ("rn", "rz", "rd", "ru"):
            ctx = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True, round=MPFR_ROUND[mode])
            with gmpy2.context(ctx):
                v = gmpy2.check_range(gmpy2.fma(gmpy2.mpfr(float(x)), gmpy2.mpfr(float(y)), gmpy2.mpfr(float(z))))
            out.append(np.uint32(NAN_BITS).view(np.float32) if gmpy2.is_nan(v) else np.float32(float(v)))
    return np.array(out, np.float32)


def test_ffma_in_the_model(model):
    a, b, c = (np.array(v, np.uint32).view(np.float32) for v in zip(*FMA_TRIPLES))
    want = fma_reference(a, b, c)
    assert want.view(np.uint32)[0] == 0x3F80_0001 and same_bits(want[4 * 2 + 2], -0.0)
    fn = Device("model").compile(FMA_MODES).get_function("fma_modes")
    assert float_ops(fn.program) == {"FFMA"}
    api.check_model_ops(fn.program)
    args = [a, b, c, np.zeros(32, np.float32)]
    assert mismatches(on_interp(fn.program, 1, 8, args), [None] * 3 + [want], fn.arg_names) == []
    got = copy.deepcopy(args)
    run = run_on_model(model, fn.program, 1, 8, got)
    assert run.stream[-1].kind == "HALT"
    assert mismatches(got, [None] * 3 + [want], fn.arg_names) == []
