"""Device printf (prelude.h records into a global-memory buffer, qwengpu/printf.py formats).
Expected lines are written out by hand from C's printf rules."""
import ctypes
import platform
import random
import re
import struct

import numpy as np
import pytest

from qwengpu import Device
from qwengpu.errors import CompileError, ExecutionError
from qwengpu.printf import PRINTF_WORDS, format_c

def f32(x: float) -> tuple[int, int]:
    """A float argument as the prelude stores it: its 32 bits."""
    return int(np.array(x, np.float32).view(np.uint32)), 32


LEVELS = [("clang", 1), ("clang", 2), ("clang", 3), ("nvrtc", 3)]

PER_THREAD = r'''
#include <cstdio>
extern "C" __global__ void k(int *o) {
    int t = threadIdx.x;
    printf("t=%d v=%lld %s|%5x|%-3c|%u\n", t, (long long)o[0] << 33, t & 1 ? "odd" : "even", t * 255, 'a' + t, -t);
    if (t == 2) printf("only two: %%, %hhd %hu %08X %+d %.3d\n", 200 + t, 70000, 0xBEEFu, 5, 7);
    if (t == 3) printf("no arguments\n");
}'''

PER_THREAD_LINES = [
    "t=0 v=-25769803776 even|    0|a  |0\n",
    "t=1 v=-25769803776 odd|   ff|b  |4294967295\n",
    "t=2 v=-25769803776 even|  1fe|c  |4294967294\n",
    "t=3 v=-25769803776 odd|  2fd|d  |4294967293\n",
    "only two: %, -54 4464 0000BEEF +5 007\n",
    "no arguments\n",
]


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_each_thread_prints_in_lane_order(fe, opt, capsys):
    r = Device(frontend=fe, opt=opt).compile(PER_THREAD).get_function("k")(grid=1, block=4,
                                                                          args=[np.array([-3], np.int32)])
    # one printf: lanes in lane order; the two divergent ones in whichever order the code runs them
    assert r.output[:4] == PER_THREAD_LINES[:4] and sorted(r.output[4:]) == sorted(PER_THREAD_LINES[4:])
    assert capsys.readouterr().out == "".join(r.output)


def test_print_output_false_keeps_stdout_quiet(capsys):
    r = Device(print_output=False).compile(PER_THREAD).get_function("k")(grid=1, block=4,
                                                                        args=[np.array([-3], np.int32)])
    assert sorted(r.output) == sorted(PER_THREAD_LINES) and capsys.readouterr().out == ""


def test_order_follows_warps_blocks_and_loops():
    src = r'''extern "C" __global__ void k(int n) {
        for (int i = 0; i < n; i++)
            if ((threadIdx.x + i) % 3 == 0) printf("b%u w%u t%u i%d\n", blockIdx.x, threadIdx.x / 4, threadIdx.x, i);
    }'''
    r = Device(print_output=False).compile(src).get_function("k")(grid=2, block=8, args=[2])
    got = [tuple(int(x) for x in re.findall(r"\d+", line)) for line in r.output]
    # blocks run one after another; within a block the scheduler alternates warps 0 and 1
    # each pass, and a warp's lanes print in lane order
    assert [g[0] for g in got] == sorted(g[0] for g in got)
    want_per_block = {(t // 4, t, i) for t in range(8) for i in range(2) if (t + i) % 3 == 0}
    for b in (0, 1):
        mine = [g[1:] for g in got if g[0] == b]
        assert set(mine) == want_per_block and len(mine) == len(want_per_block)
        for w in (0, 1):
            lanes = [(i, t) for ww, t, i in mine if ww == w]
            assert lanes == sorted(lanes)     # a warp's loop iterations in order, lanes in order


def test_full_buffer_drops_later_records_and_says_so():
    src = r'''extern "C" __global__ void k() { for (int i = 0; i < 100; i++) printf("%d\n", i); }'''
    r = Device(print_output=False).compile(src).get_function("k")(grid=1, block=1, args=[])
    fits = (PRINTF_WORDS - 1) // 3          # 3 words a record: header, format, one argument
    assert r.output[:-1] == [f"{i}\n" for i in range(fits)]
    assert "dropped" in r.output[-1]


FLOATS = r"""
extern "C" __global__ void k(const float *x) {
    float v = x[threadIdx.x];
    printf("%f %e %g %a %.3f %10.2e|%.12f\n", v, v, v, v, v, v, v);
}"""
FLOAT_IN = [1.5, 0.1, -0.375, 3.4028234663852886e38]          # 0.1f is 0.100000001490116...
FLOAT_LINES = [
    "1.500000 1.500000e+00 1.5 0x1.8p+0 1.500   1.50e+00|1.500000000000\n",
    "0.100000 1.000000e-01 0.1 0x1.99999ap-4 0.100   1.00e-01|0.100000001490\n",
    "-0.375000 -3.750000e-01 -0.375 -0x1.8p-2 -0.375  -3.75e-01|-0.375000000000\n",
    "340282346638528859811704183484516925440.000000 3.402823e+38 3.40282e+38 0x1.fffffep+127 "
    "340282346638528859811704183484516925440.000   3.40e+38|340282346638528859811704183484516925440.000000000000\n",
]


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_float_arguments_print_the_floats_exact_value(fe, opt):
    r = Device(frontend=fe, opt=opt, print_output=False).compile(FLOATS).get_function("k")(
        grid=1, block=4, args=[np.array(FLOAT_IN, np.float32)])
    assert r.output == FLOAT_LINES
    # the same lines from Python's % formatting of each float converted exactly to double
    # (%a: float.hex() less its trailing zeros, which is C's %a)
    assert r.output == ["%f %e %g %s %.3f %10.2e|%.12f\n" % (v, v, v, re.sub(r"\.?0+p", "p", v.hex()), v, v, v)
                        for v in (float(np.float32(x)) for x in FLOAT_IN)]


SPECIALS = r"""
extern "C" __global__ void k(const float *x) {
    float v = x[threadIdx.x];
    printf("%f|%e|%g|%a|%5.1f|%-6f|%+f|%08.2f|%G|%A\n", v, v, v, v, v, v, v, v, v, v);
}"""
SPECIAL_BITS = [0x7FFFFFFF, 0xFFC00000, 0x7F800000, 0xFF800000, 0x80000000, 0x00000001]
SPECIAL_LINES = [
    "nan|nan|nan|nan|  nan|nan   |+nan|     nan|NAN|NAN\n",            # C pads nan/inf with spaces
    "-nan|-nan|-nan|-nan| -nan|-nan  |-nan|    -nan|-NAN|-NAN\n",
    "inf|inf|inf|inf|  inf|inf   |+inf|     inf|INF|INF\n",
    "-inf|-inf|-inf|-inf| -inf|-inf  |-inf|    -inf|-INF|-INF\n",
    "-0.000000|-0.000000e+00|-0|-0x0p+0| -0.0|-0.000000|-0.000000|-0000.00|-0|-0X0P+0\n",
    "0.000000|1.401298e-45|1.4013e-45|0x1p-149|  0.0|0.000000|+0.000000|00000.00|1.4013E-45|0X1P-149\n",
]


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_nan_inf_negative_zero_and_subnormal_print_as_c_does(fe):
    fn = Device(frontend=fe, print_output=False).compile(SPECIALS).get_function("k")
    for at in (0, 4):                                  # 4-lane warps: two launches of up to 4
        bits = np.array(SPECIAL_BITS[at:at + 4], np.uint32)
        r = fn(grid=1, block=len(bits), args=[bits.view(np.float32)])
        assert r.output == SPECIAL_LINES[at:at + 4]


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_float_printf_in_a_divergent_branch_with_mixed_arguments(fe):
    src = r"""
    extern "C" __global__ void k(const float *x) {
        unsigned t = threadIdx.x;
        float v = x[t];
        if (t & 1) printf("odd %u %.2f %lld %a %s\n", t, v * 0.5f, (long long)t << 40, v, "x");
        else printf("even %u %e %c %g\n", t, v + 1.0f, 'a' + (int)t, sqrtf(v));
    }"""
    r = Device(frontend=fe, print_output=False).compile(src).get_function("k")(
        grid=1, block=4, args=[np.array([-4.0, 0.75, 2.25, 1e-3], np.float32)])
    odd = ["odd 1 0.38 1099511627776 0x1.8p-1 x\n",           # 0.375 to 2 places: half to even
           "odd 3 0.00 3298534883328 0x1.0624dep-10 x\n"]
    even = ["even 0 -3.000000e+00 a nan\n",                   # sqrtf(-4): CUDA's NaN 0x7fffffff
            "even 2 3.250000e+00 c 1.5\n"]
    # each side of the branch prints in lane order; the sides in whichever order the code runs them
    assert r.output in (odd + even, even + odd)


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
@pytest.mark.parametrize("arg", ["x[0] * 2.0", "1.5", "(double)x[0]"])
def test_double_argument_is_a_clear_compile_error(fe, arg):
    src = 'extern "C" __global__ void k(float *x) {\n    printf("%f\\n", ' + arg + ');\n}\n'
    with pytest.raises(CompileError, match=re.escape("printf: a double argument; the machine computes in fp32 "
                                                     "only: pass a float (write 2.0f, not 2.0; or (float)x)")):
        Device(frontend=fe).compile(src)


def test_kernel_without_printf_takes_no_buffer():
    fn = Device().compile(r'''extern "C" __global__ void k(int *o) { o[0] = 1; }''').get_function("k")
    assert fn.program.printf_buffer is None and fn.program.static_global_words == 0


@pytest.mark.parametrize("fmt,args,want", [
    ("%d %i", [(0xFFFFFFFF, 32), (5, 32)], "-1 5"),
    ("%lld|%llu", [(2**64 - 2, 64), (2**64 - 2, 64)], "-2|18446744073709551614"),
    ("%ld", [(2**32 - 1, 32)], "-1"),                       # long is the argument's own width
    ("%ld", [(2**63, 64)], "-9223372036854775808"),
    ("%#o %#x %o", [(8, 32), (255, 32), (8, 32)], "010 0xff 10"),
    ("[%*d] [%-*d] [%.*d]", [(4, 32), (7, 32), (3, 32), (1, 32), (3, 32), (9, 32)], "[   7] [1  ] [009]"),
    ("%c%c", [(0x141, 32), (0x42, 32)], "AB"),
    ("%p", [(0x40, 32)], "0x40"),
    ("%d %d", [(1, 32)], "1 %d"),                            # a missing argument prints as written
    ("100%%", [], "100%"),
    ("[%.d|%+u|%#x|%05.3d|% x|%#.3o]", [(0, 32), (1, 32), (0, 32), (7, 32), (255, 32), (8, 32)],
     "[|1|0|  007|ff|010]"),                                # C's rules, not Python's
    ("[%*.*f]", [(2**32 - 9, 32), (2**32 - 1, 32), f32(1.5)], "[1.500000 ]"),   # negative: '-', none
    ("%.1a %.1a %.1a %.0a %.0a", [f32(1.09375), f32(1.03125), f32(1.96875), f32(1.5), f32(2.5)],
     "0x1.2p+0 0x1.0p+0 0x2.0p+0 0x2p+0 0x1p+1"),          # %a rounds half to even, 1 carries to 2
    ("%#a|%#.0a|%012a|%-10a|%+.2A|% a", [f32(1.0), f32(1.0), f32(1.5), f32(0.5), f32(-0.1), f32(0.0)],
     "0x1.p+0|0x1.p+0|0x00001.8p+0|0x1p-1    |-0X1.9AP-4| 0x0p+0"),
    ("%lf %F %E %.f %#.0f %#g %G", [f32(0.25), f32(1e20), f32(-2.0), f32(2.5), f32(3.0), f32(1.0), f32(1e-5)],
     "0.250000 100000002004087734272.000000 -2.000000E+00 2 3. 1.00000 1E-05"),
    ("%f %a", [(0x3FB999999999999A, 64), (1, 64)], "0.100000 0x0.0000000000001p-1022"),  # 64-bit: a double's bits
])
def test_format_c(fmt, args, want):
    assert format_c(fmt, args, np.zeros(4, np.uint32)) == want


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's snprintf is the oracle")
def test_format_c_agrees_with_glibc():
    libc = ctypes.CDLL("libc.so.6")

    def c(fmt, arg):
        out = ctypes.create_string_buffer(512)
        libc.snprintf(out, 512, fmt.encode(), arg)
        return out.value.decode()

    rng = random.Random(32)
    edges = [0, 1 << 31, 0x7F800000, 0xFF800000, 0x7FFFFFFF, 0xFFC00000, 1, 0x807FFFFF, 0x7F7FFFFF, 0x3F800000]
    for n in range(3000):
        bits = rng.choice(edges) if n % 4 == 0 else rng.getrandbits(32)
        fmt = ("%" + "".join(rng.sample("-+ #0", rng.randint(0, 3))) + rng.choice(["", "", str(rng.randint(1, 24))])
               + rng.choice(["", "", ".", "." + str(rng.randint(0, 16))]) + rng.choice("fFeEgGaA"))
        x = struct.unpack("<f", struct.pack("<I", bits))[0]
        assert format_c(fmt, [(bits, 32)], np.zeros(1, np.uint32)) == c(fmt, ctypes.c_double(x)), (fmt, hex(bits))
    for n in range(3000):
        wide = n % 3 == 0
        v = rng.choice([0, 1, 8, (1 << (64 if wide else 32)) - 1, rng.getrandbits(64 if wide else 32)])
        fmt = ("%" + "".join(rng.sample("-+ #0", rng.randint(0, 3))) + rng.choice(["", str(rng.randint(1, 24))])
               + rng.choice(["", ".", ".0", "." + str(rng.randint(1, 22))]) + ("ll" if wide else "") + rng.choice("diouxX"))
        arg = ctypes.c_ulonglong(v) if wide else ctypes.c_uint(v)
        assert format_c(fmt, [(v, 64 if wide else 32)], np.zeros(1, np.uint32)) == c(fmt, arg), (fmt, v)


ASSERTS = r'''
#include <cassert>
extern "C" __global__ void k(int *o) {
    int t = threadIdx.x;
    assert(o[t] >= 0);
    o[t] = o[t] * 2;
}'''


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
@pytest.mark.parametrize("head", ["", "#include <assert.h>\n"])
def test_failed_assert_prints_cudas_message_and_fails_the_launch(fe, head):
    fn = Device(frontend=fe, print_output=False).compile(head + ASSERTS, filename="a.cu").get_function("k")
    ok = np.array([1, 2, 3, 4], np.int32)
    assert fn(grid=1, block=4, args=[ok]).output == [] and ok.tolist() == [2, 4, 6, 8]
    with pytest.raises(ExecutionError, match=re.escape(
            f"device-side assertion failed (2 threads): a.cu:{5 + head.count(chr(10))}: k: block: [0,0,0], thread: [1,0,0] "
            "Assertion `o[t] >= 0` failed.")):
        fn(grid=1, block=4, args=[np.array([1, -2, 3, -4], np.int32)])


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_a_failed_assert_shows_the_expression_as_written(fe):
    src = ('#include <cassert>\nextern "C" __global__ void k(int *o) {\n'
           '    assert(o[threadIdx.x] != (int)blockDim.x);\n}\n')
    fn = Device(frontend=fe, print_output=False).compile(src, filename="a.cu").get_function("k")
    with pytest.raises(ExecutionError) as e:
        fn(grid=1, block=4, args=[np.array([0, 4, 0, 0], np.int32)])
    assert str(e.value).endswith("Assertion `o[threadIdx.x] != (int)blockDim.x` failed.")
    assert "__qg_" not in str(e.value)
