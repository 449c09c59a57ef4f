"""The differential test (qwengpu/testing/difftest.py): random integer kernels, and random float
kernels, on the interpreter against the same source compiled as host C++, with UBSan on the
oracle (so the generator's programs are checked free of undefined behaviour too); proof that
the tester can fail; and the oracle harnesses themselves against values computed by hand (and
the float one against qwengpu/fp32.py over random and edge inputs)."""
import hashlib
import random

import numpy as np
import pytest

from qwengpu import fp32, isa
from qwengpu.fp32 import Rnd
from qwengpu.testing import difftest
from qwengpu.testing.difftest import CHAR, F32, I16, I32, I64, U8, U16, U32, U64
from qwengpu.errors import QwenGpuError

CI_PROGRAMS = 300
CI_SEED = 1000
FLOAT_CI_PROGRAMS = 300
FLOAT_CI_SEED = 2000
FLOATS = difftest.GenOptions(floats=True)


def test_random_programs_agree_with_the_host_oracle():
    s = difftest.run_programs(CI_PROGRAMS, seed=CI_SEED, sanitize=True)
    reports = "\n\n".join(f.report() for f in s.failures[:3])
    assert s.programs == CI_PROGRAMS and s.ok, f"{s.mismatches} mismatches, {s.errors} errors\n{reports}"
    assert set(s.by_config) == {f"{fe} -O{o}" for fe in ("clang", "nvrtc") for o in (1, 2, 3)}
    assert s.refusal_rate < 0.05


def test_generation_is_deterministic_and_seeded():
    a, b, c = difftest.generate(7), difftest.generate(7), difftest.generate(8)
    assert a.source == b.source and a.args == b.args and np.array_equal(a.inputs, b.inputs)
    assert a.source != c.source
    assert (a.frontend, a.opt) != (c.frontend, c.opt)      # configurations rotate with the seed


def test_generator_covers_the_brief():
    """Across a few dozen programs every promised construct appears."""
    text = "\n".join(difftest.generate(s).source for s in range(60))
    for needle in ["signed char ", "unsigned char ", "short ", "unsigned short ", "long long ",
                   "unsigned long long ", " / ", " % ", " << ", " >> ", " ? ", "if (", "} else {",
                   "for (", "while (", "do {", "switch (", "break;", "__device__ __forceinline__", "__device__ __noinline__",
                   "min(", "max(", "__popc(", "__clz(", "__brev(", "__mulhi(", "__umulhi(", "__sad(",
                   "__usad(", "in[", "threadIdx.x", "blockIdx.x", "blockDim.x"]:
        assert needle in text, needle
    assert "__mul24" not in text


# ---------------------------------------------------------------------------
# The tester can fail
# ---------------------------------------------------------------------------
def test_a_wrong_engine_result_is_a_mismatch():
    def off_by_one_bit(p):
        out = difftest.device_output(p)
        out[len(out) // 2] ^= 1 << 7
        return out
    s = difftest.run_programs(5, seed=CI_SEED, runner=off_by_one_bit)
    assert s.mismatches == 5 and not s.ok
    report = s.failures[0].report()
    p = s.failures[0].program
    assert f"seed {p.seed}" in report and f"--seed {p.seed} --programs 1" in report
    assert p.source.strip() in report and "expected = " in report and "got      = " in report


def test_a_kernel_whose_device_semantics_differ_is_a_mismatch():
    # the prelude defines QWENGPU, the host harness does not: the device adds one
    src = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out, int p0) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef QWENGPU
    out[g] = in[g] * 3u + (unsigned)p0 + 1u;
#else
    out[g] = in[g] * 3u + (unsigned)p0;
#endif
}
'''
    p = difftest.program_from_source(src, 2, 3, [I32], [-4], range(6), 6)
    s = difftest.compare_programs([p])
    assert s.mismatches == 1
    f = s.failures[0]
    assert f.expected.tolist() == [isa.u32(3 * i - 4) for i in range(6)]
    assert f.got.tolist() == [isa.u32(3 * i - 3) for i in range(6)]


@pytest.mark.parametrize("op, wrong", [
    ("SETLTU", lambda a, b: int(a <= b)),               # unsigned < true on equality
    ("SRA", lambda a, b: 0 if b >= 32 else a >> b),      # arithmetic shift loses the sign
])
def test_a_wrong_interpreter_op_is_caught(monkeypatch, op, wrong):
    """Mutation check: one ALU op of the interpreter made subtly wrong is found within 60 programs."""
    monkeypatch.setitem(isa.ALU_SEMANTICS, op, wrong)
    s = difftest.run_programs(60, seed=500)
    assert s.mismatches > 0


def test_the_sanitized_oracle_rejects_undefined_behaviour():
    src = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    int x = (int)in[threadIdx.x];
    out[threadIdx.x] = (unsigned)(x + 2147483647);
}
'''
    p = difftest.program_from_source(src, 1, 2, [], [], [0, 5], 2)
    assert difftest.host_outputs([p])[0].tolist() == [2147483647, 0x80000004]   # wraps unsanitised
    with pytest.raises(QwenGpuError, match="oracle failed"):
        difftest.host_outputs([p], sanitize=True)


# ---------------------------------------------------------------------------
# The oracle harness against hand-computed values
# ---------------------------------------------------------------------------
def oracle(src, grid, block, params, args, inputs, n_out):
    return difftest.host_outputs([difftest.program_from_source(src, grid, block, params, args, inputs,
                                                               n_out)])[0].tolist()


def test_oracle_builtins_by_hand():
    src = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    out[0] = (unsigned)__popc(0xF0F00001u);
    out[1] = (unsigned)__clz(0x00010000);
    out[2] = (unsigned)__clz((int)in[0]);
    out[3] = __brev(1u);
    out[4] = __brev(0x0000000Fu);
    out[5] = (unsigned)__mulhi(-2, 0x40000000);
    out[6] = __umulhi(0xFFFFFFFFu, 0xFFFFFFFFu);
    out[7] = __sad(-5, 3, 10u);
    out[8] = __sad((int)0x80000000u, 0x7FFFFFFF, 0u);
    out[9] = __usad(3u, 10u, 1u);
    out[10] = (unsigned)min(-1, 1);
    out[11] = min(0xFFFFFFFFu, 1u);
    out[12] = (unsigned)max(-1, 1);
    out[13] = max(0xFFFFFFFFu, 1u);
    out[14] = (unsigned)__mulhi(0x7FFFFFFF, 0x7FFFFFFF);
}
'''
    assert oracle(src, 1, 1, [], [], [0], 15) == [
        9, 15, 32, 0x80000000, 0xF0000000,
        0xFFFFFFFF,          # -2 * 2**30 = -2**31: high word all ones
        0xFFFFFFFE,          # (2**32-1)**2 = 2**64 - 2**33 + 1
        18, 0xFFFFFFFF,      # |(-2**31) - (2**31-1)| = 2**32 - 1
        8, 0xFFFFFFFF, 1, 1, 0xFFFFFFFF,
        0x3FFFFFFF,          # (2**31-1)**2 = 2**62 - 2**32 + 1
    ]


def test_oracle_walks_the_grid_by_hand():
    src = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    out[g] = in[g] + blockIdx.x * 100u + threadIdx.x * 10u + blockDim.x * 1000u + gridDim.x * 10000u;
}
'''
    assert oracle(src, 2, 3, [], [], [1, 2, 3, 4, 5, 6], 6) == [
        23001, 23012, 23023, 23104, 23115, 23126]


def test_oracle_scalar_parameters_by_hand():
    src = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out, char c, unsigned short us,
                                  long long ll, unsigned long long ull, short s, unsigned char uc) {
    out[0] = (unsigned)(c * 2);
    out[1] = (unsigned)(us + 1);
    out[2] = (unsigned)((ll + 1) >> 32);
    out[3] = (unsigned)(ull * ull >> 32);
    out[4] = (unsigned)(s - 1);
    out[5] = (unsigned)(uc << 4);
    out[6] = (unsigned)((signed char)uc);
}
'''
    assert oracle(src, 1, 1, [CHAR, U16, I64, U64, I16, U8],
                  [-3, 65535, 4294967295, 4294967295, -32768, 200], [0], 7) == [
        0xFFFFFFFA, 65536, 1,
        0xFFFFFFFE,          # (2**32-1)**2 >> 32
        0xFFFF7FFF,          # -32769
        3200, 0xFFFFFFC8,    # (signed char)200 = -56
    ]


def test_oracle_agrees_on_64_bit_division_by_hand():
    src = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out, unsigned long long d) {
    unsigned long long n = ((unsigned long long)in[0] << 32) | in[1];
    long long sn = -(long long)n;
    out[0] = (unsigned)(n / d);
    out[1] = (unsigned)(n % d);
    out[2] = (unsigned)(sn / (long long)d);
    out[3] = (unsigned)(sn % (long long)d);
}
'''
    # n = 2**32 + 7, d = 10: q = 429496730 (r 3); -n / 10 = -429496730 (r -3)
    assert oracle(src, 1, 1, [U64], [10], [1, 7], 4) == [
        429496730, 3, isa.u32(-429496730), isa.u32(-3)]


# ---------------------------------------------------------------------------
# Mismatches the differential test found (minimised), kept as regression checks
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("frontend", ["clang", "nvrtc"])
def test_high_bytes_of_a_scalar_parameter(frontend):
    """A sub-word ld.param at a byte offset inside a scalar parameter (ld.param.u8 [p+1],
    ld.param.u16 [p+2]) read 0 (found by seed 70088 with GenOptions(noinline=True,
    max_helpers=3, max_statements=30, max_depth=4))."""
    src = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out, short s, int i) {
    out[0] = (unsigned)(unsigned char)((unsigned short)s >> 8);
    out[1] = (unsigned)(unsigned short)(i >> 16);
    out[2] = (unsigned)(unsigned char)(i >> 24);
}
'''
    # s = -3665 = 0xF1AF, i = 0x12345678; expected by hand: 0xF1, 0x1234, 0x12
    expected, got = difftest.check_source(src, 1, 1, [I16, I32], [-3665, 0x12345678], [0], 3, frontend, 2)
    assert expected.tolist() == [0xF1, 0x1234, 0x12]
    assert got.tolist() == expected.tolist()


# ---------------------------------------------------------------------------
# Float kernels (GenOptions(floats=True)): every float operation an fp32 intrinsic, the host
# oracle's FLOAT_HARNESS defining each exactly (directed modes by fesetround, CUDA's NaN,
# min/max and conversion rules); a small sample on the model engine at the end of this file.
# Larger runs (docs/testing.md, "Float kernels"):
#   .venv/bin/python -c "from qwengpu.testing import difftest as d; s = d.run_programs(3000, seed=1,
#       opts=d.GenOptions(floats=True), sanitize=True); print(s.as_dict())"
# ---------------------------------------------------------------------------
def test_random_float_programs_agree_with_the_host_oracle():
    s = difftest.run_programs(FLOAT_CI_PROGRAMS, seed=FLOAT_CI_SEED, opts=FLOATS, sanitize=True)
    reports = "\n\n".join(f.report() for f in s.failures[:3])
    assert s.programs == FLOAT_CI_PROGRAMS and s.ok, f"{s.mismatches} mismatches, {s.errors} errors\n{reports}"
    assert set(s.by_config) == {f"{fe} -O{o}" for fe in ("clang", "nvrtc") for o in (1, 2, 3)}
    assert s.refusal_rate < 0.05


def test_the_integer_generator_keeps_its_programs():
    """A seed's integer program is what it was before float kernels joined (hash of seeds 0..39,
    default and small options, taken from the generator as it was then)."""
    h = hashlib.sha256()
    for opts in (None, difftest.GenOptions.small()):
        for seed in range(40):
            p = difftest.generate(seed, opts)
            assert not p.floats
            h.update(repr((p.source, p.grid, p.block, [t.name for t in p.params], p.args,
                           p.inputs.tolist(), p.frontend, p.opt)).encode())
    assert h.hexdigest() == "b082c4c9a269350c05783d1d4d0dce453aebd91edf168ce88238102ab9edcbff"


def test_float_generation_is_deterministic_and_covers_the_brief():
    a, b = difftest.generate(7, FLOATS), difftest.generate(7, FLOATS)
    assert a.source == b.source and a.args == b.args and np.array_equal(a.fin, b.fin)
    assert a.floats and "const float *fin, float *fout" in a.source
    programs = [difftest.generate(s, FLOATS) for s in range(80)]
    text = "\n".join(p.source for p in programs)
    for op in ("fadd", "fsub", "fmul", "fdiv", "fmaf", "fsqrt", "frcp"):
        for rnd in ("rn", "rz", "rd", "ru"):
            assert f"__{op}_{rnd}(" in text, (op, rnd)
    for rnd in ("rn", "rz", "rd", "ru"):
        for conv in ("float2int", "float2uint", "int2float", "uint2float"):
            assert f"__{conv}_{rnd}(" in text, (conv, rnd)
    for needle in ["fmaf(", "sqrtf(", "fminf(", "fmaxf(", "fabsf(", "copysignf(", "floorf(", "ceilf(",
                   "truncf(", "rintf(", "roundf(", "__saturatef(", "__float_as_int(", "__float_as_uint(",
                   "__int_as_float(", "__uint_as_float(", "__isnanf(", "__isinff(", "__finitef(",
                   "__signbitf(", "(!(", " < ", " <= ", " == ", " != ", " > ", " >= ", " ? ", "(-",
                   "((float)", "((int)fminf(fmaxf(", "((short)fminf(fmaxf(", "((unsigned)fminf(fmaxf(",
                   "fin[", "fout[", "float p", "float x", "__device__ __noinline__ float ", "p-", "p+", ".0f", ".5f"]:
        assert needle in text, needle
    for absent in ["__float2ll", "__float2ull", "__ll2float", "__ull2float", "((long long)fminf",
                   "((unsigned long long)fminf"]:          # float_int64 is off: the translator refuses them
        assert absent not in text, absent
    words = set(np.concatenate([p.fin for p in programs]).tolist())
    words |= {v for p in programs for t, v in zip(p.params, p.args) if t.is_float}
    assert {0, fp32.SIGN, fp32.POS_INF, fp32.NEG_INF, fp32.NAN, 0x7FC00000, 0x7F800001, 0x00000001,
            fp32.MAX_FINITE, fp32.ONE} <= words                    # signalling NaN and a subnormal too
    assert any(t.is_float for p in programs for t in p.params)


def test_a_wrong_float_result_is_a_mismatch():
    def flip_fout(p):
        out = difftest.device_output(p)
        out[-1] ^= 1                       # the last word is fout's
        return out
    s = difftest.run_programs(3, seed=FLOAT_CI_SEED, opts=FLOATS, runner=flip_fout)
    assert s.mismatches == 3
    report = s.failures[0].report()
    p = s.failures[0].program
    assert f"d.generate({p.seed}, d.GenOptions(floats=True))" in report and "fin = [0x" in report
    assert "then fout's" in report and "first at fout[" in report


@pytest.mark.parametrize("op, wrong", [
    ("FADD", lambda m, a, b: fp32.add(a, b, Rnd.RN)),                          # rounding mode ignored
    ("FFMA", lambda m, a, b, c: fp32.add(fp32.mul(a, b, m), c, m)),             # fma rounded twice
    ("F2I", lambda m, a: 0x80000000 if fp32.is_nan(a) else fp32.to_int(a, m, signed=True)),  # x86's NaN
    ("FSET", lambda m, a, b: fp32.compare(a, b, m.value[:-1] if m.value.endswith("u") else m.value)),
])
def test_a_wrong_interpreter_float_op_is_caught(monkeypatch, op, wrong):
    """Mutation check: one fp32 op of the interpreter made subtly wrong is found within 40 programs."""
    monkeypatch.setitem(isa.FLOAT_SEMANTICS, op, wrong)
    s = difftest.run_programs(40, seed=500, opts=FLOATS)
    assert s.mismatches > 0


def test_the_sanitized_float_oracle_rejects_an_out_of_range_cast():
    src = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out, const float *fin, float *fout) {
    out[0] = (unsigned)(int)fin[0];
}
'''
    p = difftest.program_from_source(src, 1, 1, [], [], [0], 1, fin=[0x4F400000], n_fout=0)    # 3e9
    difftest.host_outputs([p])
    with pytest.raises(QwenGpuError, match="oracle failed"):
        difftest.host_outputs([p], sanitize=True)


HAND_KERNEL = r'''extern "C" __global__ void k(const unsigned *in, unsigned *out, const float *fin, float *fout,
                                  float s) {
    float one = fin[0], tiny = fin[1], three = fin[2], two = fin[3], nan = fin[4], z = fin[5], nz = fin[6];
    float a = fin[7], top = fin[8], sub = fin[9], half = fin[10];
    fout[0] = __fadd_rz(one, tiny);
    fout[1] = __fadd_ru(one, tiny);
    fout[2] = __fsub_rd((-one), tiny);
    fout[3] = __fadd_rn(one, tiny);
    fout[4] = __fdiv_rn(one, three);
    fout[5] = __fdiv_rz(one, three);
    fout[6] = __fsqrt_rn(two);
    fout[7] = __fsqrt_ru(two);
    fout[8] = fmaf(a, a, (-__fmul_rn(a, a)));
    fout[9] = __fadd_rn(nan, one);
    fout[10] = fminf(nan, two);
    fout[11] = fminf(z, nz);
    fout[12] = fmaxf(nz, z);
    fout[13] = fabsf(nan);
    fout[14] = copysignf(nan, (-one));
    fout[15] = floorf((-half));
    fout[16] = ceilf((-half));
    fout[17] = roundf(__fadd_rn(two, half));
    fout[18] = rintf(__fadd_rn(two, half));
    fout[19] = __saturatef(nz);
    fout[20] = __frcp_rn(three);
    fout[21] = __fmul_rn(sub, half);
    fout[22] = __fmul_ru(sub, half);
    fout[23] = __fmul_rz(top, two);
    fout[24] = __fmul_rn(top, two);
    fout[25] = __fsqrt_rn((-one));
    fout[26] = __int2float_rz(16777217);
    fout[27] = __int2float_ru(16777217);
    fout[28] = __int2float_rd(-16777217);
    fout[29] = __uint2float_rn(0xFFFFFFFFu);
    fout[30] = __uint2float_rz(0xFFFFFFFFu);
    fout[31] = s;
    out[0] = (unsigned)__float2int_rn(nan);
    out[1] = (unsigned)__float2int_rz(__fmul_rn(three, 0x1p+30f));
    out[2] = __float2uint_rd((-__fadd_rn(one, half)));
    out[3] = (unsigned)__float2int_rn(__fadd_rn(two, half));
    out[4] = (unsigned)__float2int_rn(__fadd_rn(three, half));
    out[5] = (unsigned)__float2int_ru((-__fadd_rn(one, half)));
    out[6] = __float2uint_ru(top);
    out[7] = (unsigned)(z == nz) | (unsigned)(nan != nan) << 1 | (unsigned)!(nan < one) << 2
             | (unsigned)(nan < one) << 3;
}
'''
HAND_FIN = [0x3F800000, 0x33800000, 0x40400000, 0x40000000, 0xFFC00001, 0x00000000, 0x80000000,
            0x3F800001, 0x7F7FFFFF, 0x00000001, 0x3F000000]     # 1, 2**-24, 3, 2, -NaN(1), +0, -0,
HAND_EXPECTED = [                                               # 1 + 2**-23, max finite, 2**-149, 0.5
    0,                    # NaN -> 0
    0x7FFFFFFF,           # 3 * 2**30 saturates
    0,                    # -1.5 rounded down is -2: unsigned saturates to 0
    2, 4,                 # 2.5 and 3.5 to nearest even
    0xFFFFFFFF,           # -1.5 rounded up: -1
    0xFFFFFFFF,           # max finite saturates
    0b111,                # +0 == -0; NaN != NaN; !(NaN < 1); not NaN < 1
    0x3F800000, 0x3F800001, 0xBF800001,      # 1 + 2**-24: rz, ru; -1 - 2**-24 rd
    0x3F800000,           # rn: a tie, to even
    0x3EAAAAAB, 0x3EAAAAAA,                  # 1/3 rn, rz
    0x3FB504F3, 0x3FB504F4,                  # sqrt 2 rn, ru
    0x28800000,           # fma: (1 + 2**-23)**2 - rn((1 + 2**-23)**2) = 2**-46 exactly
    0x7FFFFFFF,           # a NaN result is CUDA's canonical NaN
    0x40000000,           # fminf(NaN, 2) = 2
    0x80000000, 0x00000000,                  # fminf(+0, -0) = -0, fmaxf(-0, +0) = +0
    0x7FFFFFFF,           # fabsf(NaN): canonical
    0xFFC00001,           # copysignf moves bits: the payload stays
    0xBF800000, 0x80000000,                  # floorf(-0.5) = -1, ceilf(-0.5) = -0
    0x40400000, 0x40000000,                  # roundf(2.5) = 3 (away), rintf(2.5) = 2 (even)
    0x00000000,           # __saturatef(-0) = +0
    0x3EAAAAAB,           # rcp 3
    0x00000000, 0x00000001,                  # 2**-150: rn ties to even 0, ru 2**-149
    0x7F7FFFFF, 0x7F800000,                  # overflow: rz max finite, rn inf
    0x7FFFFFFF,           # sqrt(-1)
    0x4B800000, 0x4B800001, 0xCB800001,      # 2**24 + 1: rz, ru; -(2**24 + 1) rd
    0x4F800000, 0x4F7FFFFF,                  # 2**32 - 1: rn, rz
    0x7FA00001,           # a float parameter's bits (a signalling NaN) pass unchanged
]


def test_float_oracle_by_hand():
    p = difftest.program_from_source(HAND_KERNEL, 1, 1, [F32], [0x7FA00001], [0], 8, fin=HAND_FIN, n_fout=32)
    assert difftest.host_outputs([p])[0].tolist() == HAND_EXPECTED


@pytest.mark.parametrize("frontend", ["clang", "nvrtc"])
def test_float_hand_kernel_on_the_interpreter(frontend):
    expected, got = difftest.check_source(HAND_KERNEL, 1, 1, [F32], [0x7FA00001], [0], 8, frontend, 2,
                                          fin=HAND_FIN, n_fout=32)
    assert got.tolist() == expected.tolist() == HAND_EXPECTED


def test_float_oracle_against_fp32():
    """The oracle's intrinsics against qwengpu/fp32.py (itself tested against MPFR): each of
    add/sub/mul/div/fma/sqrt in the four modes and the 32-bit conversions both ways, on 640
    random and edge operand triples (one host compile of 40 copies of one kernel)."""
    modes = {"rn": Rnd.RN, "rz": Rnd.RZ, "rd": Rnd.RM, "ru": Rnd.RP}
    ops = [("fadd", fp32.add, 2), ("fsub", fp32.sub, 2), ("fmul", fp32.mul, 2), ("fdiv", fp32.div, 2),
           ("fmaf", fp32.fma, 3), ("fsqrt", fp32.sqrt, 1)]
    lines = [f"    fout[t * 24u + {j}u] = __{name}_{r}({', '.join('abc'[:n])});"
             for j, ((name, _, n), r) in enumerate((o, r) for o in ops for r in modes)]
    convs = [("float2int", "a"), ("float2uint", "a"), ("int2float", "(int)in[t]"), ("uint2float", "in[t]")]
    for j, ((name, arg), r) in enumerate((c, r) for c in convs for r in modes):
        value = f"__{name}_{r}({arg})"
        lines.append(f"    out[t * 16u + {j}u] = " + (f"__float_as_uint({value});" if "2float" in name
                                                        else f"(unsigned){value};"))
    src = ('extern "C" __global__ void k(const unsigned *in, unsigned *out, const float *fin, float *fout) {\n'
           "    unsigned t = threadIdx.x;\n    float a = fin[3u * t], b = fin[3u * t + 1u], c = fin[3u * t + 2u];\n"
           + "\n".join(lines) + "\n}\n")
    rng = random.Random(3)
    programs = []
    for _ in range(40):
        fin = [difftest.interesting_float(rng) for _ in range(48)]
        for t in range(0, 16, 4):          # near cancellation in fma: c = -rn(a*b), or a neighbour
            c = fp32.mul(fin[3 * t], fin[3 * t + 1]) ^ fp32.SIGN
            fin[3 * t + 2] = c if t % 8 else (c + 1) & 0xFFFFFFFF
        programs.append(difftest.program_from_source(src, 1, 16, [], [], [difftest.interesting(rng, U32)
                                                     for _ in range(16)], 256, fin=fin, n_fout=384))
    for p, words in zip(programs, difftest.host_outputs(programs)):
        for t in range(16):
            a, b, c = (int(w) for w in p.fin[3 * t:3 * t + 3])
            x = int(p.inputs[t])
            want = [fn(*(a, b, c)[:n], m) for _, fn, n in ops for m in modes.values()]
            assert words[256 + 24 * t:256 + 24 * t + 24].tolist() == want, (hex(a), hex(b), hex(c))
            want = ([fp32.to_int(a, m, signed=True) for m in modes.values()]
                    + [fp32.to_int(a, m, signed=False) for m in modes.values()]
                    + [fp32.from_int(x, m, signed=True) for m in modes.values()]
                    + [fp32.from_int(x, m, signed=False) for m in modes.values()])
            assert words[16 * t:16 * t + 16].tolist() == want, (hex(a), x)


# ---------------------------------------------------------------------------
# The model engine: a small sample. 35 to 75 s here, nearly all of it loading the stand-in
# merged model (build/standin-merged, built on first use in ~5 minutes); the programs are
# small (GenOptions.small: one 4-thread block). Larger samples:
#   .venv/bin/python benchmarks/differential.py --engine model --programs 50
# ---------------------------------------------------------------------------
def test_small_programs_on_the_model_engine():
    s = difftest.run_programs(4, seed=77, engine="model", opts=difftest.GenOptions.small())
    reports = "\n\n".join(f.report() for f in s.failures[:2])
    assert s.programs == 4 and s.ok, reports


def test_small_float_programs_on_the_model_engine():
    s = difftest.run_programs(4, seed=FLOAT_CI_SEED, engine="model", opts=difftest.GenOptions.small(floats=True))
    reports = "\n\n".join(f.report() for f in s.failures[:2])
    assert s.programs == 4 and s.ok, reports
