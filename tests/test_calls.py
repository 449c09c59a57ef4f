"""Device-function calls: `.func` bodies are inlined at every call site (toolchain/inline.py).

Expected values are computed here in Python from the C source's meaning."""
import numpy as np
import pytest

from qwengpu import Device
from qwengpu.errors import UnsupportedError
from qwengpu.interp import run
from qwengpu.isa import GLOBAL_WORDS
from qwengpu.toolchain.lower import lower
from qwengpu.toolchain.ptx import parse_ptx

FRONTS = [("clang", 1), ("clang", 2), ("clang", 3), ("nvrtc", 3)]


def s32(x: int) -> int:
    return ((x & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000


def launch(src, fe, opt, block, args, grid=1):
    Device(engine="interp", frontend=fe, opt=opt).compile(src).get_function("k")(grid=grid, block=block, args=args)


NOINLINE = r"""
__device__ __noinline__ int add3(int a, int b) { return a * 3 + b; }
__device__ __noinline__ long long wide(long long x, char c) { return x * c - add3((int)x, c); }
__device__ __noinline__ void put(int *p, int i, int v) { if (i & 1) { p[i] = v; return; } p[i] = -v; }
extern "C" __global__ void k(int *o, int d) {
    int t = threadIdx.x;
    long long w = wide((long long)t << 33, (char)(t - 2));
    put(o, 3 * t, add3(t, d));
    o[3 * t + 1] = (int)w;
    o[3 * t + 2] = (int)(w >> 32);
}
"""


@pytest.mark.parametrize("fe,opt", FRONTS)
def test_noinline_helpers_with_64_bit_char_and_pointer_arguments(fe, opt):
    o = np.zeros(12, np.int32)
    launch(NOINLINE, fe, opt, 4, [o, 5])
    want = []
    for t in range(4):
        x, c = t << 33, t - 2
        w = x * c - (s32(x) * 3 + c)
        v = t * 3 + 5
        want += [v if (3 * t) & 1 else -v, s32(w), s32(w >> 32)]
    assert o.tolist() == want


NESTED = r"""
__device__ __noinline__ unsigned leaf(unsigned x) { return x * 2654435761u ^ (x >> 3); }
__device__ __noinline__ unsigned mid(unsigned x) { unsigned s = 0; for (unsigned i = 0; i < (x & 3); i++) s += leaf(x + i); return s; }
__device__ __noinline__ unsigned top(unsigned x) { return mid(x) + leaf(mid(x ^ 5)); }
extern "C" __global__ void k(const unsigned *in, unsigned *out) { out[threadIdx.x] = top(in[threadIdx.x]); }
"""


@pytest.mark.parametrize("fe,opt", FRONTS)
def test_nested_calls_in_loops_each_copy_is_independent(fe, opt):
    xs = np.array([7, 0, 0xFFFFFFFF, 123456789], np.uint32)
    out = np.zeros(4, np.uint32)
    launch(NESTED, fe, opt, 4, [xs, out])
    M = 0xFFFFFFFF
    leaf = lambda x: ((x * 2654435761) & M) ^ (x >> 3)
    mid = lambda x: sum(leaf((x + i) & M) for i in range(x & 3)) & M
    assert out.tolist() == [(mid(int(x)) + leaf(mid(int(x) ^ 5))) & M for x in xs]


def test_recursion_is_refused_and_named():
    src = r"""__device__ __noinline__ int fib(int n) { return n <= 1 ? n : fib(n - 1) + fib(n - 2); }
    extern "C" __global__ void k(int *o) { o[0] = fib(o[1]); }"""
    for fe in ("clang", "nvrtc"):
        with pytest.raises(UnsupportedError, match=r"fib .*is recursive \(fib -> fib\).*no call stack"):
            Device(engine="interp", frontend=fe).compile(src).get_function("k")


def test_function_pointers_are_refused_and_named():
    # the indirect call's PTX declares its signature with `.callprototype`, which once failed to parse
    src = r"""__device__ int add1(int v) { return v + 1; }
    __device__ int dbl2(int v) { return v * 2; }
    extern "C" __global__ void k(int *x, int which) { int (*f)(int) = which ? add1 : dbl2; x[threadIdx.x] = f(x[threadIdx.x]); }"""
    for fe in ("clang", "nvrtc"):
        with pytest.raises(UnsupportedError, match=r"function k makes an indirect call \(a function pointer\)"):
            Device(engine="interp", frontend=fe).compile(src).get_function("k")


@pytest.mark.parametrize("body,note", [
    ("x[i] = sinf(x[i]);", "this line calls sinf, whose CUDA library code"),         # .cc (clang), f64 (nvrtc)
    ("x[i] = 2.0f * cbrtf(x[i]) + fabsf(x[i]);", "this line calls cbrtf, whose"),     # lg2.approx
    ("x[i] = x[i] * 0.1;", None),                                                      # f64 the user wrote
])
def test_an_unsupported_library_instruction_names_the_function_called(body, note):
    src = 'extern "C" __global__ void k(float *x) { int i = threadIdx.x;\n' + body + "\n}"
    for fe in ("clang", "nvrtc"):
        with pytest.raises(UnsupportedError, match=r"k\.cu:2 \(PTX line \d+\): ") as e:
            Device(engine="interp", frontend=fe).compile(src, filename="k.cu").get_function("k")
        assert (note in str(e.value)) if note else "this line calls" not in str(e.value)


PTX_CALL = """.version 6.3
.target sm_75
.address_size 32
.func (.param .b32 func_retval0) helper(.param .b32 helper_param_0, .param .b32 helper_param_1)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [helper_param_0];
    ld.param.s8 %r2, [helper_param_1];
    setp.lt.s32 %p1, %r2, 0;
    @%p1 bra $neg;
    add.s32 %r3, %r1, %r2;
    st.param.b32 [func_retval0+0], %r3;
    ret;
$neg:
    sub.s32 %r3, %r1, 1000;
    st.param.b32 [func_retval0+0], %r3;
    ret;
}
.visible .entry kern(.param .u32 kern_param_0, .param .u32 kern_param_1)
{
    .reg .b32 %r<6>;
    ld.param.u32 %r1, [kern_param_0];
    ld.param.u32 %r2, [kern_param_1];
    { // callseq 0, 0
    .param .b32 param0;
    st.param.b32 [param0+0], %r2;
    .param .b32 param1;
    st.param.b32 [param1+0], 0xF0;
    .param .b32 retval0;
    call.uni (retval0), helper, (param0, param1);
    ld.param.b32 %r3, [retval0+0];
    } // callseq 0
    { // callseq 1, 0
    .param .b32 param0;
    st.param.b32 [param0+0], %r3;
    .param .b32 param1;
    st.param.b32 [param1+0], 7;
    .param .b32 retval0;
    call.uni (retval0), helper, (param0, param1);
    ld.param.b32 %r4, [retval0+0];
    } // callseq 1
    st.global.u32 [%r1], %r3;
    st.global.u32 [%r1+4], %r4;
    ret;
}"""


def test_ptx_call_slots_become_registers_and_ret_returns_to_the_call_site():
    prog = lower(parse_ptx(PTX_CALL), "kern")
    mem = np.zeros(GLOBAL_WORDS, np.uint32)
    run(prog, (1, 1, 1), (1, 1, 1), [0, 50], mem)
    # 0xF0 read as s8 is -16 < 0: 50 - 1000 = -950; then -950 + 7
    assert [s32(int(v)) for v in mem[:2]] == [-950, -943]


def test_call_of_a_function_without_body_is_named():
    text = PTX_CALL.replace(".func (.param .b32 func_retval0) helper(", ".extern .func (.param .b32 func_retval0) "
                            "other(.param .b32 other_param_0);\n.func (.param .b32 func_retval0) helper(")
    text = text.replace("helper, (param0, param1)", "other, (param0)")
    with pytest.raises(UnsupportedError, match="calls other, which has no body"):
        lower(parse_ptx(text), "kern")
