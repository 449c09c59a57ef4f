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
    src = f"""__constant__ int lut[200]{init};
    extern "C" __global__ void k(int *o) {{ o[0] = lut[199]; }}"""
    with pytest.raises(MachineLimitError, match=r"needs 201 words of parameters and constants .*lut 200.*limit is 128"):
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
