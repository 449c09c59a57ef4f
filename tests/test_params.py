"""Scalar parameters of every width keep C's value in every use: sign- or zero-extended
by their declared type, in the entry block and behind branches, on both front ends
and at every -O level. Expected values come from C's conversion rules, computed here."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qwengpu import Device
from qwengpu.errors import LaunchError, MachineLimitError

TYPES = {"char": (8, True), "signed char": (8, True), "unsigned char": (8, False), "short": (16, True),
         "unsigned short": (16, False), "int": (32, True), "unsigned": (32, False)}
LEVELS = [("clang", 1), ("clang", 2), ("clang", 3), ("nvrtc", 3)]


def c_value(v: int, bits: int, signed: bool) -> int:
    """v converted to the C type (bits, signed)."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def words64(x: int) -> list[int]:
    x &= (1 << 64) - 1
    return [x & 0xFFFFFFFF, x >> 32]


def kernel(ctype: str) -> str:
    # q: the parameter widened to 64 bits in the entry block; r: used behind a branch
    return f"""extern "C" __global__ void k(const unsigned *a, unsigned *o, {ctype} d) {{
        long long p = ((long long)a[1] << 32) | a[0];
        long long q = p + d;
        o[0] = (unsigned)q; o[1] = (unsigned)(q >> 32);
        if (a[2] & 1) {{ long long r = (long long)d * 3; o[2] = (unsigned)r; o[3] = (unsigned)(r >> 32); }}
        o[4] = (unsigned)(int)d;
    }}"""


def expected(p: int, d: int, odd: bool) -> list[int]:
    r = words64(d * 3) if odd else [0, 0]
    return words64(p + d) + r + [d & 0xFFFFFFFF]


@pytest.mark.parametrize("fe,opt", LEVELS)
@pytest.mark.parametrize("ctype", list(TYPES))
def test_narrow_signed_and_unsigned_parameters(ctype, fe, opt):
    bits, signed = TYPES[ctype]
    fn = Device(engine="interp", frontend=fe, opt=opt).compile(kernel(ctype)).get_function("k")
    lo = -(1 << (bits - 1)) if signed else 0
    for d in sorted({lo, lo + 1, -1 if signed else 1, 0, 1, (1 << (bits - 1)) - 1, (1 << bits) - 1 + lo}):
        for a in ([100, 1, 1], [0xFFFFFFFF, 0x7FFFFFFF, 0]):
            o = np.zeros(5, np.uint32)
            fn(grid=1, block=1, args=[np.array(a, np.uint32), o, d])
            p = a[0] | a[1] << 32
            assert o.tolist() == expected(p, c_value(d, bits, signed), bool(a[2] & 1)), (ctype, d, a)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(list(TYPES)), st.sampled_from(LEVELS), st.integers(0, 2**32 - 1), st.data())
def test_parameter_property(ctype, level, p32, data):
    bits, signed = TYPES[ctype]
    d = data.draw(st.integers(-(1 << (bits - 1)) if signed else 0, (1 << (bits - 1 if signed else bits)) - 1))
    fn = Device(engine="interp", frontend=level[0], opt=level[1]).compile(kernel(ctype)).get_function("k")
    o = np.zeros(5, np.uint32)
    fn(grid=1, block=1, args=[np.array([p32, 0, 1], np.uint32), o, d])
    assert o.tolist() == expected(p32, d, True)


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_issue_reproducers(fe, opt):
    dev = Device(engine="interp", frontend=fe, opt=opt)
    add = r"""extern "C" __global__ void k(const unsigned* a, int* o, int d){ long long p=((long long)a[1]<<32)|a[0];
        long long q=p+d; o[0]=(int)q; o[1]=(int)(q>>32); }"""
    o = np.zeros(2, np.int32)
    dev.compile(add).get_function("k")(grid=1, block=1, args=[np.array([100, 1], np.uint32), o, -7])
    assert o.tolist() == [93, 1]
    o = np.zeros(2, np.int32)
    dev.compile(add.replace("q=p+d", "q=p/d")).get_function("k")(
        grid=1, block=1, args=[np.array([100, 0], np.uint32), o, -7])
    assert o.tolist() == [-14, -1]
    o = np.zeros(2, np.int32)
    dev.compile(r"""extern "C" __global__ void k(int* o, char c, short s){ o[0]=c; o[1]=s; }""").get_function("k")(
        grid=1, block=1, args=[o, -5, -300])
    assert o.tolist() == [-5, -300]


@pytest.mark.parametrize("ctype,bad", [("char", 256), ("char", -129), ("unsigned short", 65536), ("short", -40000)])
def test_scalar_outside_the_parameter_width_is_refused(ctype, bad):
    fn = Device(engine="interp").compile(kernel(ctype)).get_function("k")
    with pytest.raises(LaunchError, match=f"{bad} does not fit in the 8-bit|{bad} does not fit in the 16-bit"):
        fn(grid=1, block=1, args=[np.zeros(3, np.uint32), np.zeros(5, np.uint32), bad])


VADD = r"""extern "C" __global__ void vadd(const int *a, const int *b, int *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}"""


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_parameters_know_whether_they_are_pointers(fe):
    fn = Device(engine="interp", frontend=fe).compile(VADD).get_function("vadd")
    assert [p.pointer for p in fn.program.params] == [True, True, True, False]


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_mistyped_arguments_are_refused(fe):
    fn = Device(engine="interp", frontend=fe).compile(VADD).get_function("vadd")
    x = np.arange(4, dtype=np.int32)
    with pytest.raises(LaunchError, match=r"argument 0 \(a\) is a pointer parameter: pass a 1-D .*got the integer 4"):
        fn(grid=1, block=4, args=[4, x, np.zeros(4, np.int32), 4])
    with pytest.raises(LaunchError, match=r"argument 3 \(n\) is an integer parameter: pass an integer"):
        fn(grid=1, block=4, args=[x, x, np.zeros(4, np.int32), x])


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_a_python_list_is_named_as_a_list_with_the_numpy_to_pass(fe):
    fn = Device(engine="interp", frontend=fe).compile(VADD).get_function("vadd")
    x = np.arange(4, dtype=np.int32)
    with pytest.raises(LaunchError) as e:
        fn(grid=1, block=4, args=[[0, 1, 2, 3], x, np.zeros(4, np.int32), 4])
    assert str(e.value).startswith("argument 0 (a) is a pointer parameter and got a Python list: pass a numpy "
                                   "array, np.array([0, 1, 2, 3], dtype=np.int32)")
    assert "integer" not in str(e.value)
    with pytest.raises(LaunchError, match=r"np.array\(\[0, 1, 2, 3, 4, 5, \.\.\.\], dtype=np.int32\)"):
        fn(grid=1, block=4, args=[x, x, list(range(20)), 4])
    with pytest.raises(LaunchError, match=r"argument 3 \(n\) is an integer parameter: pass an integer "
                                          r"\(got a Python list \[4\]\)"):
        fn(grid=1, block=4, args=[x, x, np.zeros(4, np.int32), [4]])


def test_unused_parameter_takes_either():
    src = r"""extern "C" __global__ void k(int *o, int *unused, int n) { o[0] = n; }"""
    fn = Device(engine="interp").compile(src).get_function("k")
    for unused in (np.zeros(1, np.int32), 0):
        o = np.zeros(1, np.int32)
        fn(grid=1, block=1, args=[o, unused, 9])
        assert o[0] == 9


@pytest.mark.parametrize("init", [" = {1, 2, 3}", ""])
@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_constant_array_is_sized_by_its_declaration(fe, init):
    src = f"""__constant__ int lut[2100]{init};
    extern "C" __global__ void k(int *o) {{ o[0] = lut[2099]; }}"""
    with pytest.raises(MachineLimitError, match=r"needs 2101 words of parameters and constants .*lut 2100.*limit is 2048"):
        Device(engine="interp", frontend=fe).compile(src).get_function("k")


def test_constant_array_within_the_limit_reads_zeros_past_its_initialiser():
    src = """__constant__ int lut[100] = {1, 2, 3};
    extern "C" __global__ void k(int *o) { o[threadIdx.x] = lut[threadIdx.x * 33]; }"""
    o = np.full(4, -1, np.int32)
    Device(engine="interp").compile(src).get_function("k")(grid=1, block=4, args=[o])
    assert o.tolist() == [1, 0, 0, 0]


def test_an_empty_array_is_refused_before_it_could_share_the_next_arrays_address():
    from qwengpu.suite import DEFAULT_DIR
    fn = Device("interp").compile((DEFAULT_DIR / "dot.cu").read_text()).get_function("dot")
    with pytest.raises(LaunchError, match=r"argument 2 \(out\) is an empty array"):
        fn(grid=1, block=4, args=(np.array([1, 2, 3], dtype=np.int32), np.array([4, 5, 6], dtype=np.int32),
                                  np.zeros(0, dtype=np.int32), 3))


# --- float arguments (issue 32) ---------------------------------------------------------------------------
# Float kernels can't run until the translator takes f32, so float32 arrays go through INTEGER kernels that
# move words: the bits must come back exactly. Expected bits are written by hand (1.5 = 0x3FC00000).
from qwengpu import isa                                                            # noqa: E402
from qwengpu.api import Function, Module                                           # noqa: E402
from qwengpu.launch import Launch                                                  # noqa: E402

SPECIAL_BITS = [0x3FC00000, 0x80000000, 0x7F800000, 0xFF800000,      # 1.5, -0.0, inf, -inf
                0x7FC00000, 0x7FFFFFFF, 0x7F800001, 0x00000001]      # quiet NaN, CUDA's NaN, a signalling NaN, 1e-45
COPY = r"""extern "C" __global__ void k(const unsigned *a, unsigned *o, int n) {
    int i = threadIdx.x;
    if (i < n) { o[i] = a[i]; o[n + i] = a[i] ^ 0x80000000u; }
}"""
NEGATE_IN_PLACE = r"""extern "C" __global__ void k(unsigned *a) { a[threadIdx.x] ^= 0x80000000u; }"""


def floats(bits) -> np.ndarray:
    return np.array(bits, np.uint32).view(np.float32)


def bits_of(a: np.ndarray) -> list[int]:
    return a.view(np.uint32).tolist()


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_float32_arrays_keep_their_bits_through_an_integer_kernel(fe, opt):
    fn = Device(engine="interp", frontend=fe, opt=opt).compile(COPY).get_function("k")
    a, o = floats(SPECIAL_BITS), np.zeros(16, np.float32)
    fn(grid=1, block=8, args=[a, o, 8])
    assert bits_of(a) == SPECIAL_BITS                                       # the input is untouched
    assert bits_of(o) == SPECIAL_BITS + [b ^ 0x80000000 for b in SPECIAL_BITS]
    assert o[0] == 1.5 and o[8] == -1.5 and np.signbit(o[1]) and o[2] == np.inf and o[11] == np.inf


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_copy_back_writes_floats_into_the_callers_float32_array(fe):
    fn = Device(engine="interp", frontend=fe).compile(NEGATE_IN_PLACE).get_function("k")
    a = floats([0x3FC00000, 0x00000000, 0x7F800001, 0xC0490FDB])          # 1.5, 0.0, sNaN, -3.1415927
    fn(grid=1, block=4, args=[a])
    assert a.dtype == np.float32 and bits_of(a) == [0xBFC00000, 0x80000000, 0xFF800001, 0x40490FDB]


def test_float32_and_int_views_of_one_buffer_share_an_address():
    fn = Device(engine="interp").compile(COPY).get_function("k")
    buf = np.zeros(4, np.float32)
    a = floats([0x3FC00000, 0x40000000])
    launch = fn.launch(1, 2, [a, buf.view(np.uint32), 2])
    assert [s.array.dtype for s in launch.arrays] == [np.float32, np.uint32]
    fn(grid=1, block=2, args=[a, buf.view(np.int32), 2])
    assert bits_of(buf) == [0x3FC00000, 0x40000000, 0xBFC00000, 0xC0000000]


def test_read_only_float32_output_is_refused():
    fn = Device(engine="interp").compile(COPY).get_function("k")
    out = np.frombuffer(bytes(16), np.float32)
    with pytest.raises(LaunchError, match=r"argument 1 \(o\) is a read-only numpy array"):
        fn(grid=1, block=2, args=[floats([0, 0]), out, 2])


@pytest.mark.parametrize("arr, message", [
    (np.zeros(4, np.float64), r"argument 0 \(a\) must be a 1-D int32, uint32 or float32 numpy array, got "
                              r"float64\[4\] \(the machine's floats are float32: pass .astype\(np.float32\)\)"),
    (np.zeros(4, np.float16), r"got float16\[4\] \(the machine's floats are float32"),
    (np.zeros((2, 2), np.float32), r"got float32\[2, 2\]$"),
    (np.zeros(0, np.float32), r"argument 0 \(a\) is an empty array"),
    (np.zeros(8, np.float32)[::2], r"argument 0 \(a\) must be contiguous"),
    (2.5, r"argument 0 \(a\) is a pointer parameter: pass a 1-D int32/uint32/float32 numpy array \(got float 2.5\)"),
    ([1.5, 2], r"argument 0 \(a\) is a pointer parameter and got a Python list: pass a numpy array, "
               r"np.array\(\[1.5, 2\], dtype=np.float32\)"),
])
def test_bad_float_arrays_are_refused(arr, message):
    fn = Device(engine="interp").compile(COPY).get_function("k")
    with pytest.raises(LaunchError, match=message):
        fn(grid=1, block=1, args=[arr, np.zeros(2, np.float32), 1])


# float scalars: a parameter's PTX type decides (isa.Param.float, from the layout)
FLOAT_PARAMS = r"""extern "C" __global__ void k(int *o, float x, double y, int n) { o[0] = n; }"""


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_layout_records_float_parameters(fe):
    fn = Device(engine="interp", frontend=fe).compile(FLOAT_PARAMS).get_function("k")
    assert [(p.bits, p.float) for p in fn.program.params[1:]] == [(32, True), (64, True), (32, False)]
    assert fn.program.params[0].float is False


@pytest.mark.parametrize("x, word", [
    (1.5, 0x3FC00000), (-0.0, 0x80000000), (0.1, 0x3DCCCCCD),             # a Python float: the nearest float32
    (np.float32(0.1), 0x3DCCCCCD), (np.float64(-2.5), 0xC0200000), (np.float16(0.5), 0x3F000000),
    (float("inf"), 0x7F800000), (float("-inf"), 0xFF800000), (float("nan"), 0x7FC00000),
    (np.array([0x7F800001], np.uint32).view(np.float32)[0], 0x7F800001),  # an np.float32 NaN keeps its payload
    (np.float32(3.4028235e38), 0x7F7FFFFF),
    (3.4028235677973362e38, 0x7F7FFFFF),                                   # just below the overflow threshold
    (3, 0x40400000), (-16777216, 0xCB800000), (16777216, 0x4B800000),      # an integer float32 holds exactly
    (16777218, 0x4B800001), (2**100, 0x71800000), (np.int32(-7), 0xC0E00000), (0, 0x00000000),
])
def test_float_parameter_words(x, word):
    program = isa.Program("k", [isa.MachineBlock([], isa.Terminator(isa.Term.EXIT))],
                          [isa.Param("x", 0, 32, False, True)])
    assert Launch.build(program, 1, 1, [x]).params == [word]


@pytest.mark.parametrize("args, message", [
    ([16777217], r"argument 1 \(x\) is a float parameter and got the integer 16777217, which float32 cannot "
                 r"hold exactly \(it holds every integer up to 2\*\*24 in magnitude\): pass np.float32\(16777217\)"),
    ([-(2**24 + 1)], r"got the integer -16777217, which float32 cannot hold exactly"),
    ([2**128], r"got the integer 340282366920938463463374607431768211456, which float32 cannot hold exactly"),
    ([1e39], r"argument 1 \(x\) is a float parameter and 1e\+39 overflows float32 to inf \(float32 holds "
             r"magnitudes 1.4e-45 .. 3.4028235e\+38\): pass np.float32\(1e\+39\) to accept that"),
    ([3.4028235677973366e38], r"overflows float32 to inf"),
    ([1e-50], r"argument 1 \(x\) is a float parameter and 1e-50 rounds to 0 in float32"),
    ([True], r"argument 1 \(x\) is a float parameter: pass a float, an np.float32 or an integer, got bool"),
    (["1.5"], r"argument 1 \(x\) is a float parameter: pass a float, an np.float32 or an integer, got str"),
    ([np.zeros(1, np.float32)], r"argument 1 \(x\) is a float parameter: pass a float \(got an array of 1 float32\)"),
    ([[1.5]], r"argument 1 \(x\) is a float parameter: pass a float \(got a Python list \[1.5\]\)"),
])
def test_float_parameter_refusals(args, message):
    fn = Device(engine="interp").compile(FLOAT_PARAMS).get_function("k")
    with pytest.raises(LaunchError, match=message):
        fn.launch(1, 1, [np.zeros(1, np.int32), *args, 0.0, 3])


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
@pytest.mark.parametrize("n, message", [
    (1.5, r"argument 3 \(n\) is an integer parameter and got the float 1.5: pass an integer \(a float is not "
          r"converted: int\(x\) truncates, round\(x\) rounds\)"),
    (2.0, r"got the float 2.0"), (np.float32(0.1), r"got the float 0.1"), (float("nan"), r"got the float nan"),
])
def test_a_float_for_an_integer_parameter_is_refused_not_truncated(fe, n, message):
    fn = Device(engine="interp", frontend=fe).compile(VADD).get_function("vadd")
    x = np.arange(4, dtype=np.int32)
    with pytest.raises(LaunchError, match=message):
        fn(grid=1, block=4, args=[x, x, np.zeros(4, np.int32), n])


@pytest.mark.parametrize("y", [1.5, 0, np.float32(1)])
def test_a_double_parameter_is_refused(y):
    fn = Device(engine="interp").compile(FLOAT_PARAMS).get_function("k")
    with pytest.raises(LaunchError, match=r"argument 2 \(y\) is a 64-bit float parameter \(.f64\); the machine "
                                          r"passes float parameters as float \(.f32\) only"):
        fn.launch(1, 1, [np.zeros(1, np.int32), 1.5, y, 3])


def test_float_parameter_word_reaches_the_kernel_on_the_interpreter():
    """A hand-built machine program (the translator refuses f32 PTX for now) that stores its float
    parameter's word: o[0] = x, read from CONST word 1."""
    r = isa.Reg
    blocks = [isa.MachineBlock([isa.Instr(isa.Op.LD, r(1), (isa.Imm(0), isa.Imm(0)), isa.Space.CONST),
                                isa.Instr(isa.Op.LD, r(2), (isa.Imm(0), isa.Imm(4)), isa.Space.CONST)],
                               isa.Terminator(isa.Term.JMP, 1)),
              isa.MachineBlock([isa.Instr(isa.Op.ST, r(0), (r(1), isa.Imm(0), r(2)), isa.Space.GLOBAL)],
                               isa.Terminator(isa.Term.EXIT))]
    program = isa.Program("store_x", blocks, [isa.Param("o", 0, pointer=True), isa.Param("x", 1, float=True)],
                          regs_used=3)
    fn = Function(Module(Device("interp"), "", "", "<hand-built>"), program.name, program)
    for x, word in [(1.5, 0x3FC00000), (np.float32(-0.0), 0x80000000), (7, 0x40E00000),
                    (np.array([0x7FFFFFFF], np.uint32).view(np.float32)[0], 0x7FFFFFFF)]:
        o = np.zeros(1, np.float32)
        fn(grid=1, block=1, args=[o, x])
        assert bits_of(o) == [word], x
