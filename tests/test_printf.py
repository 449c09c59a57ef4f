"""Device printf (prelude.h records into a global-memory buffer, qwengpu/printf.py formats).
Expected lines are written out by hand from C's printf rules."""
import re

import numpy as np
import pytest

from qwengpu import Device
from qwengpu.errors import CompileError, ExecutionError
from qwengpu.printf import PRINTF_WORDS, format_c

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


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_float_argument_is_a_clear_compile_error(fe):
    with pytest.raises(CompileError, match="floating-point arguments are not supported"):
        Device(frontend=fe).compile(r'''extern "C" __global__ void k(int *o) { printf("%f\n", o[0] * 0.5f); }''')


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
])
def test_format_c(fmt, args, want):
    assert format_c(fmt, args, np.zeros(4, np.uint32)) == want


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
