"""Kernels from outside the suite on the model engine (the stand-in merged model, fast path,
no replay): signed narrow parameters, __noinline__ calls, a pointer that is a __constant__
table or a global array, and prmt with a register selector. Expected values are computed
here in Python from C's rules; the same kernels run on the interpreter in test_params.py,
test_calls.py, test_generic_addressing.py and test_lower.py."""
import numpy as np
import pytest

from qwengpu import Device


@pytest.fixture(scope="module")
def model():
    from qwengpu.machine.build import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    return Device("model")


def s32(x: int) -> int:
    return ((x & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000


def test_signed_parameters_widened_on_the_model(model):
    add = r"""extern "C" __global__ void k(const unsigned* a, int* o, int d, char c, short s) {
        long long p = ((long long)a[1] << 32) | a[0];
        long long q = p + d, r = p / d;
        o[0] = (int)q; o[1] = (int)(q >> 32); o[2] = (int)r; o[3] = (int)(r >> 32); o[4] = c; o[5] = s; }"""
    o = np.zeros(6, np.int32)
    model.compile(add).get_function("k")(grid=1, block=1, args=[np.array([100, 1], np.uint32), o, -7, -5, -300])
    p = 100 + (1 << 32)
    q, r = p - 7, -(p // 7)             # C division truncates toward zero
    assert o.tolist() == [s32(q), s32(q >> 32), s32(r), s32(r >> 32), -5, -300]


def test_noinline_call_on_the_model(model):
    src = r"""__device__ __noinline__ int twice_minus(int a, int b) { return (a < b) ? 2 * a - b : 2 * b - a; }
    extern "C" __global__ void k(const int *x, int *o) {
        int t = threadIdx.x;
        o[t] = twice_minus(x[t], x[(t + 1) & 3]) + twice_minus(t, 2);
    }"""
    x = np.array([5, -3, 9, 0], np.int32)
    o = np.zeros(4, np.int32)
    model.compile(src).get_function("k")(grid=1, block=4, args=[x, o])
    f = lambda a, b: 2 * a - b if a < b else 2 * b - a   # noqa: E731
    assert o.tolist() == [f(int(x[t]), int(x[(t + 1) & 3])) + f(t, 2) for t in range(4)]


def test_constant_or_global_pointer_on_the_model(model):
    src = r"""__constant__ unsigned ct[4] = {10, 20, 30, 40};
    extern "C" __global__ void k(const unsigned *in, unsigned *out, unsigned n) {
        unsigned i = threadIdx.x, x = in[i];
        out[i] = (x & 1u) ? ct[x & 3u] : in[(i + 1) % n];
    }"""
    x = np.array([1, 2, 3, 6], np.uint32)
    out = np.zeros(4, np.uint32)
    model.compile(src).get_function("k")(grid=1, block=4, args=[x, out, 4])
    assert out.tolist() == [20, 3, 40, 1]


def test_byte_perm_with_a_register_selector_on_the_model(model):
    src = r"""extern "C" __global__ void k(const unsigned *in, unsigned *out) {
        unsigned t = threadIdx.x;
        out[t] = __byte_perm(in[0], in[1], in[2 + t]);
    }"""
    sels = [0x3210, 0x7531, 0x0123, 0x4567]
    x = np.array([0x33221100, 0x77665544, *sels], np.uint32)
    out = np.zeros(4, np.uint32)
    Device("model", frontend="nvrtc").compile(src).get_function("k")(grid=1, block=4, args=[x, out])
    # bytes of y:x are 00 11 22 33 44 55 66 77: nibble k names byte 0xkk/0x11
    assert out.tolist() == [0x33221100, 0x77553311, 0x00112233, 0x44556677]


def test_printf_on_the_model_prints_the_interpreters_lines_in_its_order(model):
    src = r"""extern "C" __global__ void k(const int *x) {
        int t = threadIdx.x;
        printf("lane %d: %d * 3 = %lld\n", t, x[t], (long long)x[t] * 3);
        if (x[t] < 0) printf("negative at %d\n", t);
    }"""
    x = np.array([4, -7, 100000, -1], np.int32)
    got = model.compile(src).get_function("k")(grid=1, block=4, args=[x]).output
    want = Device("interp").compile(src).get_function("k")(grid=1, block=4, args=[x]).output
    assert got == want
    assert got == [f"lane {t}: {int(v)} * 3 = {int(v) * 3}\n" for t, v in enumerate(x)] + \
        ["negative at 1\n", "negative at 3\n"]
