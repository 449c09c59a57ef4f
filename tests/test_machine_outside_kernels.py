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
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    return Device("model")


def s32(x: int) -> int:
    return ((x & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000


@pytest.mark.parametrize("fe,opt", [("clang", 1), ("clang", 2), ("clang", 3), ("nvrtc", 3)])
def test_signed_parameters_widened_on_the_model(model, fe, opt):
    add = r"""extern "C" __global__ void k(const unsigned* a, int* o, int d, char c, short s) {
        long long p = ((long long)a[1] << 32) | a[0];
        long long q = p + d, r = p / d;
        o[0] = (int)q; o[1] = (int)(q >> 32); o[2] = (int)r; o[3] = (int)(r >> 32); o[4] = c; o[5] = s; }"""
    o = np.zeros(6, np.int32)
    dev = Device("model", frontend=fe, opt=opt)
    dev.compile(add).get_function("k")(grid=1, block=1, args=[np.array([100, 1], np.uint32), o, -7, -5, -300])
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


M32, M64 = 0xFFFFFFFF, 2**64 - 1

EVERYDAY_WIDE = r'''
#include <cstdint>
#include <climits>
#include <cuda_runtime.h>
extern "C" __global__ void k(const uint32_t *__restrict__ in, uint32_t *out) {
    size_t t = threadIdx.x;
    int2 p = make_int2((int)__ldg(&in[2 * t]), (int)in[2 * t + 1]);
    int64_t wide = (int64_t)p.x * p.y;
    uint64_t u = ((uint64_t)in[2 * t] << 32) | in[2 * t + 1];
    out[8 * t + 0] = (uint32_t)max(wide, (int64_t)INT_MIN);
    out[8 * t + 1] = (uint32_t)llabs(wide) ^ (uint32_t)(llabs(wide) >> 32);
    out[8 * t + 2] = __funnelshift_l(in[2 * t], in[2 * t + 1], (unsigned)t * 9u);
    out[8 * t + 3] = __popcll(u) | __clzll((long long)u) << 8 | __ffsll((long long)u) << 16;
    out[8 * t + 4] = (uint32_t)(__brevll(u) >> 16);
    out[8 * t + 5] = (uint32_t)__umul64hi(u, 0x9E3779B97F4A7C15ull);
    out[8 * t + 6] = (uint32_t)__hadd(p.x, p.y) ^ (uint32_t)__rhadd(p.x, -p.y);
    out[8 * t + 7] = (uint32_t)ullmax(u, (unsigned long long)UINT_MAX) ^ (uint32_t)(llmin((long long)u, LLONG_MAX) >> 40);
}'''


def everyday_wide_expected(words):
    out = []
    for t in range(4):
        x, y = int(words[2 * t]), int(words[2 * t + 1])
        px, py = s32(x), s32(y)
        wide, u = px * py, x << 32 | y
        su = u - 2**64 if u >> 63 else u
        brev = int(f"{u:064b}"[::-1], 2)
        ffs = (u & -u).bit_length()
        out += [max(wide, -2**31) & M32,
                (abs(wide) & M32) ^ (abs(wide) >> 32 & M32),
                ((y << 32 | x) << (t * 9 % 32)) >> 32 & M32,
                bin(u).count("1") | (64 - u.bit_length()) << 8 | ffs << 16,
                brev >> 16 & M32,
                (u * 0x9E3779B97F4A7C15) >> 64 & M32,
                ((px + py) >> 1 & M32) ^ ((px - py + 1) >> 1 & M32),
                (max(u, M32) & M32) ^ (su >> 40 & M32)]
    return out


EVERYDAY_BLOCK = r'''
extern "C" __global__ void k(const int *v, unsigned *out) {
    int t = threadIdx.x;
    int n = __syncthreads_count(v[t] > 0);
    unsigned m = __match_any_sync(0xffffffff, v[t] & 3);
    out[t] = n | m << 8 | __byte_perm((unsigned)v[t], 0x77665544u, 0x4071u) << 16;
}'''


def everyday_block_expected(v):
    n = sum(1 for x in v if x > 0)
    out = []
    for t, x in enumerate(v):
        w = t // 4 * 4
        m = sum(1 << (j - w) for j in range(w, w + 4) if (v[j] & 3) == (x & 3))
        data = ((0x77665544 << 32) | (x & M32)).to_bytes(8, "little")
        perm = int.from_bytes(bytes(data[(0x4071 >> (4 * i)) & 7] for i in range(4)), "little")
        out.append((n | m << 8 | perm << 16) & M32)
    return out


@pytest.mark.parametrize("engine", ["interp", "model"])
def test_everyday_cuda_of_the_clang_front_end(model, engine):
    """<cstdint>, <climits>, <cuda_runtime.h>, size_t, int2/make_int2, __ldg, 64-bit max/llabs/
    llmin/ullmax, funnel shifts, 64-bit bit counts, __umul64hi, __hadd/__rhadd; then
    __syncthreads_count, __match_any_sync and __byte_perm across two warps."""
    dev = model if engine == "model" else Device("interp")
    words = np.array([5, 0xFFFFFFF0, 0x80000000, 7, 123456789, 0xDEADBEEF, 1, 2], np.uint32)
    out = np.zeros(32, np.uint32)
    dev.compile(EVERYDAY_WIDE).get_function("k")(grid=1, block=4, args=[words, out])
    assert out.tolist() == everyday_wide_expected(words)
    v = [5, -3, 9, 6, 0, 13, -1, 2]
    out = np.zeros(8, np.uint32)
    dev.compile(EVERYDAY_BLOCK).get_function("k")(grid=1, block=8, args=[np.array(v, np.int32), out])
    assert out.tolist() == everyday_block_expected(v)


def test_a_kernel_that_uses_every_register_on_the_model(model):
    """29 loaded values live at once take all 31 registers of a lane without a spill (one
    more value spills to shared memory; with no room for it the lowering refuses the kernel:
    test_lower.py's test_register_limit)."""
    from qwengpu import isa
    n = 29
    loads = " ".join(f"int v{i} = x[{i} * 4 + t];" for i in range(n))
    stores = " ".join(f"o[{i} * 4 + t] = v{n - 1 - i} * {i + 1};" for i in range(n))
    src = f'extern "C" __global__ void k(const int* x, int* o) {{ int t = threadIdx.x; {loads} {stores} }}'
    fn = model.compile(src).get_function("k")
    assert (fn.program.regs_used, fn.program.shared_words) == (isa.USABLE_REGS, 0)
    x = np.arange(4 * n, dtype=np.int32) * 7 - 100
    o = np.zeros(4 * n, np.int32)
    fn(grid=1, block=4, args=[x, o])
    assert o.tolist() == [int(x[(n - 1 - i) * 4 + t]) * (i + 1) for i in range(n) for t in range(4)]


@pytest.mark.parametrize("grid", [(256, 1, 1), (8, 4, 8)])
def test_a_grid_of_256_thread_blocks_on_the_model(model, grid):
    """isa.MAX_GRID_BLOCKS blocks (one more is refused: test_interp.py's test_launch_limits), each
    block's two threads writing their block's indices: the thread blocks' rows of the
    special-register table, both of its banks (blocks 0-127 and 128-255); replay checked."""
    from qwengpu import isa
    src = r"""extern "C" __global__ void k(unsigned *o) {
        unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
        o[2 * b + threadIdx.x] = blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16 | threadIdx.x << 24;
    }"""
    gx, gy, gz = grid
    assert gx * gy * gz == isa.MAX_GRID_BLOCKS
    o = np.zeros(2 * isa.MAX_GRID_BLOCKS, np.uint32)
    Device("model", check="replay").compile(src).get_function("k")(grid=grid, block=2, args=[o])
    want = [x | y << 8 | z << 16 | t << 24 for z in range(gz) for y in range(gy) for x in range(gx) for t in range(2)]
    assert o.tolist() == want
