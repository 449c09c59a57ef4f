"""The differential test (qwengpu/testing/difftest.py): random integer kernels on the interpreter
against the same source compiled as host C++, with UBSan on the oracle (so the generator's
programs are checked free of undefined behaviour too); proof that the tester can fail; and
the oracle harness itself against values computed by hand."""
import numpy as np
import pytest

from qwengpu import isa
from qwengpu.testing import difftest
from qwengpu.testing.difftest import CHAR, I16, I32, I64, U8, U16, U64
from qwengpu.errors import QwenGpuError

CI_PROGRAMS = 600
CI_SEED = 1000


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
# The model engine: a small sample. 35 to 75 s here, nearly all of it loading the stand-in
# merged model (build/standin-merged, built on first use in ~5 minutes); the programs are
# small (GenOptions.small: one 4-thread block). Larger samples:
#   .venv/bin/python benchmarks/differential.py --engine model --programs 50
# ---------------------------------------------------------------------------
def test_small_programs_on_the_model_engine():
    s = difftest.run_programs(4, seed=77, engine="model", opts=difftest.GenOptions.small())
    reports = "\n\n".join(f.report() for f in s.failures[:2])
    assert s.programs == 4 and s.ok, reports
