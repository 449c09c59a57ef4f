"""The prelude's CUDA (qwengpu/toolchain/prelude.h and the include/ stubs), construct by
construct: kernels run on the interpreter through both front ends (clang at -O1..-O3,
NVRTC) and their results are checked against values worked out here from CUDA's
documented definitions (hand-computed, or Python big-int models); never against
qwengpu itself. Constructs the machine cannot run are compile errors that name them.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qwengpu import Device
from qwengpu.errors import CompileError

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
BUILDS = [("clang", 1), ("clang", 2), ("clang", 3), ("nvrtc", 2)]
IDS = [f"{fe}-O{opt}" if fe == "clang" else fe for fe, opt in BUILDS]
builds = pytest.mark.parametrize("fe, opt", BUILDS, ids=IDS)
PROPERTY = settings(max_examples=50, deadline=None)

u32s = st.integers(0, M32)
i32s = st.integers(-(1 << 31), (1 << 31) - 1)
u64s = st.integers(0, M64)
i64s = st.integers(-(1 << 63), (1 << 63) - 1)
# edge values first: hypothesis mixes them in with the random ones
e64 = st.one_of(st.sampled_from([0, 1, -1, 2, -2, (1 << 63) - 1, -(1 << 63), (1 << 32) - 1, 1 << 32,
                                 -(1 << 32), 5000000000000, -5000000000000]), i64s)


_FUNCS = {}


def function(src: str, fe: str, opt: int, name: str = "k"):
    key = (src, fe, opt, name)
    if key not in _FUNCS:
        _FUNCS[key] = Device(engine="interp", frontend=fe, opt=opt).compile(src, filename="t.cu").get_function(name)
    return _FUNCS[key]


def run(src, fe, opt, args, grid=1, block=1):
    function(src, fe, opt)(grid=grid, block=block, args=args)
    return args


def words(values) -> np.ndarray:
    """64-bit values as little-endian (lo, hi) uint32 pairs."""
    out = []
    for v in values:
        v &= M64
        out += [v & M32, v >> 32]
    return np.array(out, np.uint32)


def unwords(a: np.ndarray, signed=False) -> list[int]:
    vals = [int(a[i]) | (int(a[i + 1]) << 32) for i in range(0, len(a), 2)]
    return [v - (1 << 64) if signed and v >> 63 else v for v in vals]


def s32(v):
    v &= M32
    return v - (1 << 32) if v >> 31 else v


def sext24(v):
    v &= 0xFFFFFF
    return v - (1 << 24) if v >> 23 else v


# 64-bit helpers inside kernels: values travel as (lo, hi) word pairs
LL = r'''
__device__ __forceinline__ unsigned long long get64(const unsigned *a, int i) {
    return ((unsigned long long)a[2 * i + 1] << 32) | a[2 * i];
}
__device__ __forceinline__ void put64(unsigned *a, int i, unsigned long long v) {
    a[2 * i] = (unsigned)v; a[2 * i + 1] = (unsigned)(v >> 32);
}
template <class A, class B> struct same { static constexpr bool value = false; };
template <class A> struct same<A, A> { static constexpr bool value = true; };
'''


# --- the two reproducers (issue 12, item 4) ------------------------------------
MUL24 = r'''
extern "C" __global__ void k(unsigned *out, int y) {
    int v = __mul24(y, y);
    out[0] = v >= 0;
    out[1] = v;
}
'''


@builds
def test_mul24_is_the_low_word_of_the_48_bit_product(fe, opt):
    """PTX mul24.lo.s32: 0x7FFFFF * 0x7FFFFF = 0x3FFFFF000001, low word 0xFF000001 < 0."""
    out = run(MUL24, fe, opt, [np.zeros(2, np.uint32), 0x7FFFFF])[0]
    assert [int(x) for x in out] == [0, 0xFF000001]


ABS64 = LL + r'''
extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    long long v = (long long)get64(in, 0);
    put64(out, 0, abs(v));
    put64(out, 1, llabs(v));
    static_assert(same<decltype(abs(v)), long long>::value, "abs(long long) is long long");
}
'''


@builds
def test_abs_of_long_long_does_not_narrow(fe, opt):
    out = run(ABS64, fe, opt, [words([-5000000000000]), np.zeros(4, np.uint32)])[1]
    assert [hex(int(x)) for x in out] == ["0x27395000", "0x48c"] * 2


# --- min / max / abs overloads -------------------------------------------------
MINMAX64 = LL + r'''
extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    int t = threadIdx.x;
    long long a = (long long)get64(in, 2 * t), b = (long long)get64(in, 2 * t + 1);
    unsigned long long ua = (unsigned long long)a, ub = (unsigned long long)b;
    unsigned *o = out + 2 * 14 * t;
    put64(o, 0, min(a, b));   put64(o, 1, max(a, b));
    put64(o, 2, min(ua, ub)); put64(o, 3, max(ua, ub));
    put64(o, 4, min(a, ub));  put64(o, 5, max(ua, b));
    put64(o, 6, max(a, ub));  put64(o, 7, min(ua, b));
    put64(o, 8, llmin(a, b)); put64(o, 9, llmax(a, b));
    put64(o, 10, ullmin(ua, ub)); put64(o, 11, ullmax(ua, ub));
    put64(o, 12, abs(a)); put64(o, 13, llabs(b));
    static_assert(same<decltype(max(a, ub)), unsigned long long>::value, "");
    static_assert(same<decltype(min(ua, b)), unsigned long long>::value, "");
    static_assert(same<decltype(min(a, b)), long long>::value, "");
    static_assert(same<decltype(max(ua, ub)), unsigned long long>::value, "");
}
'''


def minmax64_model(a, b):
    ua, ub = a & M64, b & M64
    return [min(a, b), max(a, b), min(ua, ub), max(ua, ub), min(ua, ub), max(ua, ub), max(ua, ub), min(ua, ub),
            min(a, b), max(a, b), min(ua, ub), max(ua, ub), abs(a), abs(b)]


@builds
@PROPERTY
@given(st.lists(st.tuples(e64, e64), min_size=4, max_size=4))
def test_64_bit_min_max_abs_and_their_signed_unsigned_mixes(fe, opt, pairs):
    ins = words([v for p in pairs for v in p])
    out = run(MINMAX64, fe, opt, [ins, np.zeros(4 * 2 * 14, np.uint32)], block=4)[1]
    want = [v & M64 for a, b in pairs for v in minmax64_model(a, b)]
    assert unwords(out) == want


MINMAX32 = LL + r'''
extern "C" __global__ void k(const int *in, unsigned *out) {
    int t = threadIdx.x;
    int a = in[2 * t], b = in[2 * t + 1];
    unsigned ua = a, ub = b;
    unsigned *o = out + 11 * t;
    o[0] = min(a, b); o[1] = max(a, b); o[2] = min(ua, ub); o[3] = max(ua, ub);
    o[4] = min(a, ub); o[5] = max(ua, b); o[6] = umin(ua, ub); o[7] = umax(ua, ub);
    o[8] = abs(a); o[9] = labs((long)b); o[10] = min((short)a, (short)b);
    static_assert(same<decltype(min(a, ub)), unsigned>::value, "");
    static_assert(same<decltype(max(ua, b)), unsigned>::value, "");
    static_assert(same<decltype(min((short)a, (short)b)), int>::value, "");
}
'''


def s16(v):
    v &= 0xFFFF
    return v - (1 << 16) if v >> 15 else v


@builds
@PROPERTY
@given(st.lists(st.tuples(i32s, i32s), min_size=4, max_size=4))
def test_32_bit_min_max_abs(fe, opt, pairs):
    ins = np.array([v for p in pairs for v in p], np.int32)
    out = run(MINMAX32, fe, opt, [ins, np.zeros(44, np.uint32)], block=4)[1]
    want = []
    for a, b in pairs:
        ua, ub = a & M32, b & M32
        want += [min(a, b), max(a, b), min(ua, ub), max(ua, ub), min(ua, ub), max(ua, ub), min(ua, ub),
                 max(ua, ub), abs(a), abs(b), min(s16(a), s16(b))]
    assert [int(x) for x in out] == [v & M32 for v in want]


# --- 64-bit bit counts, mul64hi, averages, funnel shifts, byte_perm -------------
BITS64 = LL + r'''
extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    int t = threadIdx.x;
    unsigned long long x = get64(in, t);
    unsigned *o = out + 5 * t;
    o[0] = __popcll(x); o[1] = __clzll((long long)x); o[2] = __ffsll((long long)x);
    unsigned long long r = __brevll(x);
    o[3] = (unsigned)r; o[4] = (unsigned)(r >> 32);
}
'''


def brev64(x):
    return int(f"{x:064b}"[::-1], 2)


@builds
@PROPERTY
@given(st.lists(st.one_of(st.sampled_from([0, 1, 1 << 63, 1 << 32, M64, 0x80000000]), u64s),
                min_size=4, max_size=4))
def test_popcll_clzll_ffsll_brevll(fe, opt, xs):
    out = run(BITS64, fe, opt, [words(xs), np.zeros(20, np.uint32)], block=4)[1]
    want = []
    for x in xs:
        ffs = (x & -x).bit_length()              # 1 + index of the lowest set bit, 0 for 0
        r = brev64(x)
        want += [bin(x).count("1"), 64 - x.bit_length(), ffs, r & M32, r >> 32]
    assert [int(v) for v in out] == want


MUL64HI = LL + r'''
extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    int t = threadIdx.x;
    unsigned long long a = get64(in, 2 * t), b = get64(in, 2 * t + 1);
    put64(out, 2 * t, (unsigned long long)__mul64hi((long long)a, (long long)b));
    put64(out, 2 * t + 1, __umul64hi(a, b));
}
'''


@builds
@PROPERTY
@given(st.lists(st.tuples(e64, e64), min_size=4, max_size=4))
def test_mul64hi_and_umul64hi(fe, opt, pairs):
    ins = words([v for p in pairs for v in p])
    out = run(MUL64HI, fe, opt, [ins, np.zeros(16, np.uint32)], block=4)[1]
    want = []
    for a, b in pairs:
        want += [((a * b) >> 64) & M64, (((a & M64) * (b & M64)) >> 64) & M64]
    assert unwords(out) == want


HADD = r'''
extern "C" __global__ void k(const int *in, unsigned *out) {
    int t = threadIdx.x;
    int x = in[2 * t], y = in[2 * t + 1];
    unsigned *o = out + 4 * t;
    o[0] = __hadd(x, y); o[1] = __rhadd(x, y); o[2] = __uhadd(x, y); o[3] = __urhadd(x, y);
}
'''


@builds
@PROPERTY
@given(st.lists(st.tuples(st.one_of(st.sampled_from([-(1 << 31), (1 << 31) - 1, -1, 0, 1]), i32s),
                          st.one_of(st.sampled_from([-(1 << 31), (1 << 31) - 1, -1, 0, 1]), i32s)),
                min_size=4, max_size=4))
def test_hadd_rhadd_uhadd_urhadd(fe, opt, pairs):
    """CUDA: (x + y) >> 1 and (x + y + 1) >> 1 computed without overflow (floor)."""
    ins = np.array([v for p in pairs for v in p], np.int32)
    out = run(HADD, fe, opt, [ins, np.zeros(16, np.uint32)], block=4)[1]
    want = []
    for x, y in pairs:
        ux, uy = x & M32, y & M32
        want += [(x + y) >> 1, (x + y + 1) >> 1, (ux + uy) >> 1, (ux + uy + 1) >> 1]
    assert [int(v) for v in out] == [v & M32 for v in want]


FUNNEL = r'''
extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    int t = threadIdx.x;
    unsigned lo = in[3 * t], hi = in[3 * t + 1], s = in[3 * t + 2];
    unsigned *o = out + 4 * t;
    o[0] = __funnelshift_l(lo, hi, s); o[1] = __funnelshift_lc(lo, hi, s);
    o[2] = __funnelshift_r(lo, hi, s); o[3] = __funnelshift_rc(lo, hi, s);
}
'''


def funnel_model(lo, hi, s):
    """CUDA: hi:lo shifted by s & 31 (l/r) or min(s, 32) (lc/rc); l keeps the high word, r the low."""
    pair = (hi << 32) | lo
    wrap, clamp = s & 31, min(s, 32)
    return [((pair << wrap) >> 32) & M32, ((pair << clamp) >> 32) & M32, (pair >> wrap) & M32,
            (pair >> clamp) & M32]


shifts = st.one_of(st.integers(0, 40), st.sampled_from([31, 32, 33, 63, 64, M32]), u32s)


@builds
@PROPERTY
@given(st.lists(st.tuples(u32s, u32s, shifts), min_size=4, max_size=4))
def test_funnel_shifts(fe, opt, cases):
    ins = np.array([v for c in cases for v in c], np.uint32)
    out = run(FUNNEL, fe, opt, [ins, np.zeros(16, np.uint32)], block=4)[1]
    assert [int(v) for v in out] == [v for c in cases for v in funnel_model(*c)]


BYTE_PERM = r'''
extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    int t = threadIdx.x;
    unsigned x = in[3 * t], y = in[3 * t + 1], s = in[3 * t + 2];
    unsigned *o = out + 5 * t;
    o[0] = __byte_perm(x, y, s);
    o[1] = __byte_perm(x, y, 0x3210); o[2] = __byte_perm(x, y, 0x0123);
    o[3] = __byte_perm(x, y, 0x8888); o[4] = __byte_perm(x, y, 0xfe51);
}
'''


def byte_perm_model(x, y, s):
    """CUDA Math API: result byte n = input[s<4n+2:4n>] of the bytes y:x (high 16 bits and bit 3 unused)."""
    data = ((y << 32) | x).to_bytes(8, "little")
    return int.from_bytes(bytes(data[(s >> (4 * n)) & 7] for n in range(4)), "little")


@builds
@PROPERTY
@given(st.lists(st.tuples(u32s, u32s, u32s), min_size=4, max_size=4))
def test_byte_perm_register_and_constant_selectors(fe, opt, cases):
    ins = np.array([v for c in cases for v in c], np.uint32)
    out = run(BYTE_PERM, fe, opt, [ins, np.zeros(20, np.uint32)], block=4)[1]
    want = [byte_perm_model(x, y, sel) for x, y, s in cases for sel in (s, 0x3210, 0x0123, 0x8888, 0xfe51)]
    assert [int(v) for v in out] == want


def test_byte_perm_hand_values():
    """x = 0x33221100, y = 0x77665544: the selector's nibbles name the bytes 0..7 directly."""
    assert byte_perm_model(0x33221100, 0x77665544, 0x7531) == 0x77553311
    assert byte_perm_model(0x33221100, 0x77665544, 0x8888) == 0x00000000     # bit 3 unused: byte 0
    src = BYTE_PERM
    for fe, opt in BUILDS:
        ins = np.array([0x33221100, 0x77665544, 0x7531] * 4, np.uint32)
        out = run(src, fe, opt, [ins, np.zeros(20, np.uint32)], block=4)[1]
        assert [hex(int(v)) for v in out[:5]] == ["0x77553311", "0x33221100", "0x112233", "0x0", "0x77665511"]


@builds
@PROPERTY
@given(st.lists(st.tuples(i32s, i32s), min_size=4, max_size=4))
def test_mul24_umul24(fe, opt, pairs):
    src = r'''
extern "C" __global__ void k(const int *in, unsigned *out) {
    int t = threadIdx.x;
    out[2 * t] = __mul24(in[2 * t], in[2 * t + 1]);
    out[2 * t + 1] = __umul24(in[2 * t], in[2 * t + 1]);
}
'''
    ins = np.array([v for p in pairs for v in p], np.int32)
    out = run(src, fe, opt, [ins, np.zeros(8, np.uint32)], block=4)[1]
    want = [v for a, b in pairs for v in ((sext24(a) * sext24(b)) & M32, ((a & 0xFFFFFF) * (b & 0xFFFFFF)) & M32)]
    assert [int(v) for v in out] == want


# --- loads, vector types, standard types and limits, headers ---------------------
VECTORS = r'''
extern "C" __global__ void k(const int *in, int *out) {
    static_assert(sizeof(int2) == 8 && alignof(int2) == 8 && sizeof(int4) == 16 && alignof(int4) == 16, "");
    static_assert(sizeof(int3) == 12 && alignof(int3) == 4 && sizeof(char4) == 4 && alignof(char4) == 4, "");
    static_assert(alignof(short2) == 4 && alignof(short4) == 8 && alignof(longlong2) == 16, "");
    static_assert(sizeof(uchar2) == 2 && alignof(ushort2) == 4 && sizeof(uint3) == 12, "");
    int t = threadIdx.x;
    int2 a = ((const int2 *)in)[t];                       // in[2t], in[2t+1]
    uint4 b = ((const uint4 *)in)[t];                     // in[4t..4t+3]
    ((int2 *)out)[t] = make_int2(a.y, a.x);
    ((uint4 *)(out + 8))[t] = make_uint4(b.w, b.z, b.y, b.x);
    char4 c = ((const char4 *)in)[t];
    ((char4 *)(out + 24))[t] = make_char4(c.w, c.z, c.y, c.x);
    short2 s = ((const short2 *)in)[t];
    ((short2 *)(out + 28))[t] = make_short2(s.y, s.x);
    int2 g = __ldg((const int2 *)in + t);
    out[32 + t] = __ldg(in + t) + g.x - g.y;
    longlong2 l = make_longlong2(in[t], -1);
    ((longlong2 *)(out + 36))[t] = l;
}
'''


@builds
def test_vector_types_load_store_and_ldg(fe, opt):
    rng = np.random.default_rng(1)
    ins = rng.integers(-2**31, 2**31, 16, dtype=np.int64).astype(np.int32)
    out = run(VECTORS, fe, opt, [ins, np.zeros(52, np.int32)], block=4)[1]
    u = ins.view(np.uint32).astype(np.int64)
    want = np.zeros(52, np.int64)
    for t in range(4):
        want[2 * t:2 * t + 2] = [u[2 * t + 1], u[2 * t]]
        want[8 + 4 * t:12 + 4 * t] = u[4 * t:4 * t + 4][::-1]
        want[24 + t] = int.from_bytes(int(u[t]).to_bytes(4, "little")[::-1], "little")
        want[28 + t] = ((u[t] & 0xFFFF) << 16) | (u[t] >> 16)
        want[32 + t] = (u[t] + u[2 * t] - u[2 * t + 1]) & M32
        want[36 + 4 * t:40 + 4 * t] = [u[t], M32 if ins[t] < 0 else 0, M32, M32]
    assert [int(v) & M32 for v in out] == [int(v) & M32 for v in want]


def test_vector_accesses_are_vector_loads_and_stores():
    ptx = Device(frontend="clang", opt=2).compile(VECTORS).ptx
    for op in ("ld.global.v2.u32", "ld.global.v4.u32", "st.global.v2.u32", "st.global.v4.u32"):
        assert op in ptx, op


HEADERS = ["cstdint", "stdint.h", "climits", "limits.h", "cstddef", "stddef.h", "cuda_runtime.h", "cuda.h",
           "device_launch_parameters.h", "cuda_runtime_api.h", "vector_types.h", "device_functions.h",
           "cstdlib", "stdlib.h", "cstdio", "stdio.h", "cassert", "assert.h"]
TYPES = "".join(f"#include <{h}>\n" for h in HEADERS) + r'''
#include "cstdint"
extern "C" __global__ void k(unsigned *out) {
    static_assert(sizeof(int8_t) == 1 && sizeof(uint8_t) == 1 && sizeof(int16_t) == 2 && sizeof(uint16_t) == 2, "");
    static_assert(sizeof(int32_t) == 4 && sizeof(uint32_t) == 4 && sizeof(int64_t) == 8 && sizeof(uint64_t) == 8, "");
    static_assert(sizeof(std::uint32_t) == 4 && sizeof(std::int64_t) == 8 && sizeof(intptr_t) == sizeof(void *), "");
    static_assert(sizeof(size_t) == sizeof(void *) && sizeof(ptrdiff_t) == sizeof(void *), "");
    static_assert(sizeof(std::size_t) == sizeof(void *) && (int8_t)-1 < 0 && (uint8_t)-1 == 255, "");
    static_assert(INT_MAX == 2147483647 && INT_MIN == -INT_MAX - 1 && UINT_MAX == 0xffffffffu, "");
    static_assert(LLONG_MAX == 0x7fffffffffffffffLL && LLONG_MIN == -LLONG_MAX - 1, "");
    static_assert(ULLONG_MAX == ~0ULL && UINT64_MAX == ~0ULL && INT64_MIN == LLONG_MIN, "");
    static_assert(CHAR_BIT == 8 && SHRT_MAX == 32767 && USHRT_MAX == 65535 && SCHAR_MIN == -128, "");
    static_assert(INT8_MIN == -128 && UINT16_MAX == 65535 && INT32_MAX == INT_MAX && UINT32_MAX == UINT_MAX, "");
    static_assert(LONG_MAX == (long)(~0UL >> 1) && ULONG_MAX == ~0UL && SIZE_MAX == (size_t)-1, "");
    static_assert(UINT32_C(7) == 7u && INT64_C(-1) < 0 && UINT64_C(1) << 63 != 0, "");
    size_t n = threadIdx.x; ptrdiff_t d = -3; uint8_t b = 250; b += 10; int16_t h = 0x7fff; h += 1;
    out[n] = n; out[4] = (unsigned)d; out[5] = b; out[6] = (unsigned)(int)h; out[7] = INT_MIN;
    out[8] = UINT_MAX; out[9] = (unsigned)(LLONG_MAX >> 32); out[10] = (unsigned)INT64_MIN;
    out[11] = (unsigned)(INT64_MIN >> 32);
}
'''


@builds
def test_standard_types_limits_and_headers(fe, opt):
    out = run(TYPES, fe, opt, [np.zeros(12, np.uint32)], block=4)[0]
    assert [int(v) for v in out] == [0, 1, 2, 3, (-3) & M32, 4, 0xFFFF8000, 0x80000000, M32, 0x7FFFFFFF, 0,
                                     0x80000000]


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_header_the_project_lacks_is_not_found(fe):
    with pytest.raises(CompileError, match="vector"):
        Device(frontend=fe).compile('#include <vector>\nextern "C" __global__ void k(int *p) { *p = 1; }\n')


# --- __syncthreads_count / _and / _or --------------------------------------------
SYNC_COUNT = r'''
extern "C" __global__ void k(const int *pred, unsigned *out) {
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned n = blockDim.x * blockDim.y * blockDim.z, g = blockIdx.x * n + t;
    unsigned *o = out + 5 * g;
    o[0] = __syncthreads_count(pred[g]);
    o[1] = __syncthreads_count(pred[g] & 2);          // the shared word is reused
    o[2] = __syncthreads_and(pred[g]);
    o[3] = __syncthreads_or(pred[g] & 4);
    o[4] = __syncthreads_and(1) + __syncthreads_or(0);
}
'''


@builds
@pytest.mark.parametrize("block", [4, 6, 16, (3, 2), (2, 2, 2)], ids=str)
def test_syncthreads_count_and_or(fe, opt, block):
    n = int(np.prod(block))
    rng = np.random.default_rng(n)
    pred = rng.choice([0, 1, 2, 3, 4, 6, -8], size=2 * n).astype(np.int32)
    pred[:n] = 1 if n == 16 else pred[:n]              # one block where every predicate holds
    out = run(SYNC_COUNT, fe, opt, [pred, np.zeros(10 * n, np.uint32)], grid=2, block=block)[1]
    want = []
    for b in range(2):
        p = [int(v) for v in pred[b * n:(b + 1) * n]]
        row = [sum(v != 0 for v in p), sum(v & 2 != 0 for v in p), int(all(v != 0 for v in p)),
               int(any(v & 4 for v in p)), 1]
        want += row * n
    assert [int(v) for v in out] == want


# --- __match_any_sync / __match_all_sync ------------------------------------------
MATCH = LL + r'''
extern "C" __global__ void k(const int *v, const unsigned *w, unsigned *out) {
    int t = threadIdx.x;
    unsigned *o = out + 9 * t;
    int pred = 7, pred64 = 7;
    o[0] = __match_any_sync(0xffffffff, v[t]);
    o[1] = __match_any_sync(__activemask(), (unsigned)v[t]);
    o[2] = __match_all_sync(0xffffffff, v[t], &pred);
    o[3] = pred;
    o[4] = __match_any_sync(0xffffffff, (long long)get64(w, t));
    o[5] = __match_all_sync(0xffffffff, get64(w, t), &pred64);
    o[6] = pred64;
    o[7] = 99;
    unsigned left = blockDim.x - (t & ~3), live = left >= 4 ? 0xfu : (1u << left) - 1;
    if (t % 2 == 0) o[7] = __match_any_sync(0x5 & live, v[t]);   // only lanes 0 and 2 take part
    o[8] = __match_any_sync(0xffffffff, (long)v[t]);            // 32-bit long (clang), 64-bit (NVRTC)
}
'''


def match_model(vals, w64, n):
    out = []
    for t in range(n):
        lanes = range(t // 4 * 4, min(t // 4 * 4 + 4, n))
        same = sum(1 << (j % 4) for j in lanes if vals[j] == vals[t])
        same64 = sum(1 << (j % 4) for j in lanes if w64[j] == w64[t])
        full = sum(1 << (j % 4) for j in lanes)
        all32, all64 = same == full, same64 == full
        pair = [j for j in lanes if j % 2 == 0]
        sub = sum(1 << (j % 4) for j in pair if vals[j] == vals[t]) if t % 2 == 0 else 99
        out += [same, same, M32 if all32 else 0, int(all32), same64, M32 if all64 else 0, int(all64), sub, same]
    return out


@builds
@pytest.mark.parametrize("vals, w64", [
    ([5, 7, 5, 7, 1, 1, 1, 1], [1 << 32, 1, 1 << 32, 1 << 32, 3, 3, 3, 3]),
    ([2, 2, 2, 2, 9, 8], [5, 5, 5, 5, -1, (1 << 64) - 1]),          # 6 threads: a partial second warp
    ([0, 1, 2, 3], [0, 1 << 32, 1 << 33, 0]),
], ids=["pairs", "partial-warp", "distinct"])
def test_match_any_and_match_all(fe, opt, vals, w64):
    n = len(vals)
    w64 = [x & M64 for x in w64]
    out = run(MATCH, fe, opt, [np.array(vals, np.int32), words(w64), np.zeros(9 * n, np.uint32)], block=n)[2]
    assert [int(x) for x in out] == match_model(vals, w64, n)


# --- what the machine cannot do: clear compile errors ------------------------------
def refusal(fe: str, body: str, head: str = "") -> str:
    src = head + 'extern "C" __global__ void k(int *p, unsigned long long *u, long long *l) {\n' + body + "\n}\n"
    with pytest.raises(CompileError) as e:
        Device(frontend=fe).compile(src, filename="r.cu")
    return str(e.value)


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
@pytest.mark.parametrize("head", ["#define NDEBUG\n#include <cassert>\n", "#define NDEBUG\n#include <assert.h>\n"])
def test_assert_with_ndebug_compiles_out(fe, head):
    src = head + 'extern "C" __global__ void k(int *p) { assert(p[0] == 12345); p[1] = p[0] + 1; }\n'
    out = np.array([7, 0], np.int32)
    Device(frontend=fe).compile(src).get_function("k")(grid=1, block=1, args=[out])
    assert list(out) == [7, 8]


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
@pytest.mark.parametrize("call, name", [
    ("atomicAdd(u, 1ull)", "atomicAdd"), ("atomicAdd(u, 1)", "atomicAdd"), ("atomicExch(u, 2ull)", "atomicExch"),
    ("atomicCAS(u, 1ull, 2ull)", "atomicCAS"), ("atomicMin(l, 3ll)", "atomicMin"), ("atomicMax(u, 3ull)", "atomicMax"),
    ("atomicAnd(u, 3ull)", "atomicAnd"), ("atomicOr(u, 3ull)", "atomicOr"), ("atomicXor(u, 3ull)", "atomicXor"),
])
def test_64_bit_atomics_are_a_clear_compile_error(fe, call, name):
    msg = refusal(fe, f"    p[0] = (int){call};")
    assert name in msg and "only 32-bit atomics" in msg, msg


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_32_bit_atomics_still_compile_through_the_nvrtc_wrappers(fe):
    src = r'''
extern "C" __global__ void k(int *p, unsigned *q) {
    int t = threadIdx.x;
    atomicAdd(p, t); atomicSub(p + 1, t); atomicMax(p + 2, t); atomicMin(q, 5u); atomicOr(q + 1, 1u << t);
    atomicXor(q + 2, 3u); atomicInc(q + 3, 2u); atomicExch(p + 3, 9); atomicCAS(p + 4, 0, t + 1);
    atomicAnd(q + 4, ~(1u << t)); atomicDec(q + 5, 10u);
}
'''
    p, q = np.array([0, 0, -1, 0, 0], np.int32), np.array([9, 0, 0, 0, 0xFF, 0], np.uint32)
    Device(frontend=fe).compile(src).get_function("k")(grid=1, block=4, args=[p, q])
    assert list(p[:4]) == [6, -6, 3, 9] and p[4] in (1, 2, 3, 4)
    # inc wraps in [0, 2]: 0,1,2,0 after 4; dec from 0 goes to 10 then 9, 8, 7
    assert [int(x) for x in q] == [5, 0xF, 0, 1, 0xF0, 7]


# --- a few constructs on the model engine -------------------------------------------
@pytest.fixture(scope="module")
def model_device():
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    return Device("model")


@pytest.mark.parametrize("src, args, want", [
    (r'''extern "C" __global__ void k(const int *pred, unsigned *out) {
    int t = threadIdx.x;
    out[t] = __syncthreads_count(pred[t]);
    out[6 + t] = __syncthreads_or(pred[t] & 4);
}''', lambda: [np.array([1, 0, 3, 0, 0, 2], np.int32), np.zeros(12, np.uint32)],
     [3] * 6 + [0] * 6),
    (r'''extern "C" __global__ void k(const int *v, unsigned *out) {
    int t = threadIdx.x;
    out[t] = __match_any_sync(0xffffffff, v[t]);
}''', lambda: [np.array([4, 9, 4, 4], np.int32), np.zeros(4, np.uint32)], [0b1101, 0b0010, 0b1101, 0b1101]),
    (r'''extern "C" __global__ void k(const unsigned *x, unsigned *out) {
    int t = threadIdx.x;
    out[t] = __byte_perm(x[t], x[t + 1], 0x7531) ^ __funnelshift_l(x[t], x[t + 1], t + 4) ^ __mul24(x[t], x[t]);
}''', lambda: [np.array([0x33221100, 0x77665544, 0x7FFFFF, 0xDEADBEEF, 0x01020304], np.uint32),
               np.zeros(4, np.uint32)], None),
], ids=["syncthreads_count", "match_any", "byte_perm-funnelshift-mul24"])
def test_on_the_model_engine(model_device, src, args, want):
    a = args()
    x = [int(v) for v in a[0]]
    if want is None:
        want = [byte_perm_model(x[t], x[t + 1], 0x7531) ^ funnel_model(x[t], x[t + 1], t + 4)[0]
                ^ ((sext24(x[t]) * sext24(x[t])) & M32) for t in range(4)]
    n = 6 if "pred" in src else 4
    model_device.compile(src, filename="m.cu").get_function("k")(grid=1, block=n, args=a)
    assert [int(v) for v in a[1]] == want


# --- shuffles of long and long long (two words) --------------------------------------
SHFL64 = LL + r'''
extern "C" __global__ void k(const unsigned *in, unsigned *out) {
    int t = threadIdx.x;
    long long x = (long long)get64(in, t);
    unsigned long long u = get64(in, t);
    put64(out, 6 * t + 0, (unsigned long long)__shfl_sync(0xffffffff, x, 3 - t));
    put64(out, 6 * t + 1, __shfl_up_sync(0xffffffff, u, 1));
    put64(out, 6 * t + 2, (unsigned long long)__shfl_down_sync(0xffffffff, x, 2));
    put64(out, 6 * t + 3, __shfl_xor_sync(0xffffffff, u, 1));
    put64(out, 6 * t + 4, (unsigned long long)__shfl_xor_sync(0xffffffff, x, 2, 2));   // width 2
    put64(out, 6 * t + 5, (unsigned long long)(long long)__shfl_down_sync(0xffffffff, (long)x, 1));
    static_assert(same<decltype(__shfl_sync(0xffffffff, x, 0)), long long>::value, "");
}
'''


@builds
@PROPERTY
@given(st.lists(e64, min_size=4, max_size=4))
def test_shuffles_of_64_bit_values(fe, opt, xs):
    out = run(SHFL64, fe, opt, [words(xs), np.zeros(48, np.uint32)], block=4)[1]
    long_bits = 32 if fe == "clang" else 64           # long is 32-bit on clang's i386 target
    want = []
    for t in range(4):
        lng = xs[t + 1 if t < 3 else t] & ((1 << long_bits) - 1)
        lng = lng - (1 << long_bits) if lng >> (long_bits - 1) else lng     # sign-extended back
        # width 2: a lane reads an earlier group of 2 (t ^ 2 < t), its own value for a later one
        xor2 = xs[t ^ 2] if t ^ 2 < t else xs[t]
        want += [xs[3 - t], xs[t - 1] if t >= 1 else xs[t], xs[t + 2] if t + 2 < 4 else xs[t], xs[t ^ 1], xor2, lng]
    assert unwords(out) == [v & M64 for v in want]


# --- float: CUDA's single-precision API on both front ends (compiled, PTX checked) -----
# The float ISA is not in the machine yet; these compile and check the PTX and the types.
from qwengpu.toolchain.frontend import compile_cuda  # noqa: E402
from test_frontend import LIBRARY_FTZ, assert_as_written  # noqa: E402

FES = pytest.mark.parametrize("fe", ["clang", "nvrtc"])
FLOAT_HEADERS = "".join(f"#include <{h}>\n" for h in ["cmath", "math.h", "cfloat", "float.h", "math_constants.h"])
UNARY = ("acos acosh asin asinh atan atanh cbrt ceil cos cosh cospi cyl_bessel_i0 cyl_bessel_i1 erf erfc erfcinv "
         "erfcx erfinv exp exp10 exp2 expm1 fabs floor j0 j1 lgamma log log10 log1p log2 logb nearbyint normcdf "
         "normcdfinv rcbrt rint round rsqrt sin sinh sinpi sqrt tan tanh tgamma trunc y0 y1").split()
BINARY = "atan2 copysign fdim fmax fmin fmod hypot nextafter pow remainder".split()
STD = ("abs acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1 fabs fdim "
       "floor fmax fmin fmod hypot lgamma log log10 log1p log2 logb nearbyint nextafter pow remainder rint round "
       "sin sinh sqrt tan tanh tgamma trunc").split()
TWO_ARGS = {"atan2", "copysign", "fdim", "fmax", "fmin", "fmod", "hypot", "nextafter", "pow", "remainder"}
EVERYTHING = FLOAT_HEADERS + LL + r'''
extern "C" __global__ void k(float *o, int *io, unsigned *uo, long long *lo) {
    int t = threadIdx.x, n = io[t], e; unsigned u = uo[t]; long long l = lo[t];
    float x = o[t], y = o[t + 4], z = o[t + 8], s, c, w, *out = o + 64 + 1024 * t;
    int *iout = io + 64 + 1024 * t;      /* one slot a result: nothing folds into another */
#define F(call) static_assert(same<decltype(call), float>::value, #call); *out++ = call;
#define I(call, T) static_assert(same<decltype(call), T>::value, #call); *iout++ = (int)(call);
''' + "".join(f"    F({f}f(x)) F({f}(x))\n" for f in UNARY) \
    + "".join(f"    F({f}f(x, y)) F({f}(x, y))\n" for f in BINARY) \
    + "".join(f"    F(std::{f}({'x, y' if f in TWO_ARGS else 'x'}))\n" for f in STD) + r'''
    F(rhypotf(x, y)) F(fmaf(x, y, z)) F(fma(x, y, z)) F(std::fma(x, y, z)) F(pow(x, n)) F(fdividef(x, y))
    F(ldexpf(x, n)) F(ldexp(x, n)) F(scalbnf(x, n)) F(scalbn(x, n)) F(scalblnf(x, 3L)) F(scalbln(x, 3L))
    F(frexpf(x, &e)) F(frexp(x, &e)) F(modff(x, &w)) F(modf(x, &w)) F(remquof(x, y, &e)) F(remquo(x, y, &e))
    F(jnf(n, x)) F(ynf(n, x)) F(norm3df(x, y, z)) F(rnorm3df(x, y, z)) F(norm4df(x, y, z, x))
    F(rnorm4df(x, y, z, x)) F(normf(2, o)) F(rnormf(2, o)) F(nanf("")) F(min(x, y)) F(max(x, y)) F(abs(x))
    F(__expf(x)) F(__exp10f(x)) F(__logf(x)) F(__log2f(x)) F(__log10f(x)) F(__sinf(x)) F(__cosf(x))
    F(__tanf(x)) F(__tanhf(x)) F(__powf(x, y)) F(__fdividef(x, y)) F(__saturatef(x)) F(__frsqrt_rn(x))
    F(__int_as_float(n)) F(__uint_as_float(u))
#define RND(r) F(__fadd_##r(x, y)) F(__fsub_##r(x, y)) F(__fmul_##r(x, y)) F(__fdiv_##r(x, y)) \
    F(__fmaf_##r(x, y, z)) F(__fmaf_ieee_##r(x, y, z)) F(__frcp_##r(x)) F(__fsqrt_##r(x))       \
    F(__int2float_##r(n)) F(__uint2float_##r(u)) F(__ll2float_##r(l)) F(__ull2float_##r((unsigned long long)l)) \
    I(__float2int_##r(x), int) I(__float2uint_##r(x), unsigned int) I(__float2ll_##r(x), long long)      \
    I(__float2ull_##r(x), unsigned long long)
    RND(rn) RND(rz) RND(rd) RND(ru)
    I(isnan(x), int) I(isinf(x), int) I(isfinite(x), int) I(signbit(x), int) I(std::isnan(x), int)
    I(std::isinf(x), int) I(std::isfinite(x), int) I(std::signbit(x), int) I(__isnanf(x), int)
    I(__isinff(x), int) I(__finitef(x), int) I(__signbitf(x), int) I(ilogbf(x), int) I(ilogb(x), int)
    I(llrintf(x), long long) I(llroundf(x), long long) I(llrint(x), long long) I(llround(x), long long)
    I(lrintf(x), long) I(lroundf(x), long) I(lrint(x), long) I(lround(x), long) I(__float_as_int(x), int)
    I(__float_as_uint(x), unsigned int)
    sincosf(x, &s, &c); F(s) F(c) sincos(y, &s, &c); F(s) F(c) __sincosf(z, &s, &c); F(s) F(c)
    sincospif(x, &s, &c); F(s) F(c)
    F(__shfl_sync(0xf, x, 1)) F(__shfl_up_sync(0xf, x, 1)) F(__shfl_down_sync(0xf, x, 1)) F(__shfl_xor_sync(0xf, x, 1))
    F(atomicAdd(o + 32, x)) F(atomicExch(o + 33, y))
    F(INFINITY) F(NAN) F(HUGE_VALF) F(FLT_MAX) F(FLT_MIN) F(FLT_EPSILON) F(FLT_TRUE_MIN) F(CUDART_PI_F)
    F(CUDART_INF_F) F(CUDART_NAN_F) F((float)M_PI)
    float4 v = make_float4(x, y, z, w); float2 h = make_float2(v.y, v.w);
    F(h.x + h.y) ((float4 *)o)[5 + t] = v; I(n + e, int)
}
'''


@FES
def test_every_float_function_compiles_with_cuda_types(fe):
    """Each name of the set (C names, CUDA's float overloads, std::, intrinsics, conversions,
    shuffles, atomics, constants) compiles, with CUDA's result type; the whole library is
    inlined: no call, nothing external, float + - * rounded, .ftz only in library sequences."""
    ptx = compile_cuda(EVERYTHING, frontend=fe, filename="all.cu")
    assert_as_written(ptx, LIBRARY_FTZ)
    assert "call" not in ptx.split(".entry", 1)[1]


def bits(v) -> int:
    return int(np.array([v], np.float32).view(np.uint32)[0])


CONSTANTS = {"INFINITY": 0x7F800000, "HUGE_VALF": 0x7F800000, "-INFINITY": 0xFF800000, "NAN": 0x7FC00000,
             "FLT_MAX": 0x7F7FFFFF, "FLT_MIN": 0x00800000, "FLT_EPSILON": 0x34000000, "FLT_TRUE_MIN": 0x00000001,
             "CUDART_INF_F": 0x7F800000, "CUDART_NAN_F": 0x7FFFFFFF, "CUDART_MIN_DENORM_F": 1,
             "CUDART_MAX_NORMAL_F": 0x7F7FFFFF, "CUDART_NEG_ZERO_F": 0x80000000, "CUDART_ONE_F": 0x3F800000,
             "CUDART_PI_F": bits(np.pi), "CUDART_PIO2_F": bits(np.pi / 2), "CUDART_PIO4_F": bits(np.pi / 4),
             "CUDART_SQRT_TWO_F": bits(np.sqrt(2)), "CUDART_SQRT_HALF_F": bits(np.sqrt(0.5)),
             "CUDART_L2E_F": bits(np.log2(np.e)), "CUDART_LN2_F": bits(np.log(2)),
             "CUDART_2_OVER_PI_F": bits(2 / np.pi),
             "CUDART_TWO_TO_23_F": 0x4B000000, "CUDART_TWO_TO_32_F": 0x4F800000,
             "(float)M_PI": bits(np.pi), "(float)M_E": bits(np.e), "(float)M_SQRT2": bits(np.sqrt(2)),
             "(float)M_LN2": bits(np.log(2)), "(float)M_PI_2": bits(np.pi / 2), "(float)M_1_PI": bits(1 / np.pi),
             "(float)HUGE_VAL": 0x7F800000}


@FES
def test_float_constants_are_constant_expressions_with_their_bits(fe):
    checks = "".join(f'static_assert(__builtin_bit_cast(unsigned, {name}) == {want:#010x}u, "{name}");\n'
                     for name, want in CONSTANTS.items())
    src = FLOAT_HEADERS + checks + r'''
static_assert(sizeof(M_PI) == 8 && sizeof(HUGE_VAL) == 8 && sizeof(INFINITY) == 4 && sizeof(NAN) == 4, "");
static_assert(FLT_MANT_DIG == 24 && FLT_DIG == 6 && FLT_RADIX == 2 && FLT_MAX_EXP == 128 && FLT_MIN_EXP == -125, "");
static_assert(FLT_MAX_10_EXP == 38 && FLT_MIN_10_EXP == -37 && FLT_DECIMAL_DIG == 9 && CUDART_REMQUO_MASK_F == 7u, "");
constexpr float table[3] = {INFINITY, -INFINITY, FLT_MAX};
extern "C" __global__ void k(float *o) { o[threadIdx.x] = table[threadIdx.x % 3]; }
'''
    compile_cuda(src, frontend=fe, filename="c.cu")


def test_float_flt_constants_match_numpy():
    info = np.finfo(np.float32)
    assert CONSTANTS["FLT_MAX"] == bits(info.max) and CONSTANTS["FLT_MIN"] == bits(info.tiny)
    assert CONSTANTS["FLT_EPSILON"] == bits(info.eps) and CONSTANTS["FLT_TRUE_MIN"] == bits(info.smallest_subnormal)


@pytest.mark.parametrize("call", ["sqrt(d)", "exp(1.0)", "pow(d, 2.0)", "fabs(d)", "fmax(d, 1.0)", "isnan(d)",
                                  "min(d, d)", "abs(2.5)", "ldexp(d, 2)", "std::sin(d)", "fma(d, d, d)"])
def test_double_math_is_a_compile_error_under_clang(call):
    """fp32 only: a double argument picks the double overload, which says so (never a silent
    conversion to float; NVRTC compiles it to f64 PTX, which lowering refuses)."""
    src = FLOAT_HEADERS + 'extern "C" __global__ void k(double *o) { double d = o[0]; o[1] = (double)' + call + "; }\n"
    with pytest.raises(CompileError, match=r"double precision is not supported \(qwengpu runs 32-bit floats\)"):
        compile_cuda(src, frontend="clang", filename="d.cu")


@FES
def test_float_overloads_stay_single_precision(fe):
    src = FLOAT_HEADERS + r'''
extern "C" __global__ void k(float *o, int n) {
    float x = o[threadIdx.x];
    o[4] = sqrt(x) + exp(x) + fabs(x) + fmax(x, 1.0f) + std::floor(x) + pow(x, 2) + pow(x, 0.5f);
    o[5] = abs(x) + min(x, 1.5f) + std::abs(x) + std::pow(x, 3.0f);
}
'''
    ptx = compile_cuda(src, frontend=fe)
    assert ".f64" not in ptx and "sqrt.rn.f32" in ptx


@FES
def test_float_vector_types(fe):
    src = r'''
extern "C" __global__ void k(float4 *v, float2 *w, float *o) {
    static_assert(sizeof(float4) == 16 && alignof(float4) == 16 && alignof(float2) == 8, "");
    static_assert(sizeof(float3) == 12 && alignof(float3) == 4 && sizeof(float1) == 4, "");
    int t = threadIdx.x;
    float4 a = v[t]; float2 b = w[t]; float3 c = make_float3(a.x, a.y, b.x); float1 d = make_float1(b.y);
    v[t] = make_float4(a.w, a.z, c.z, d.x); w[t] = make_float2(c.x + c.y, a.x);
}
'''
    ptx = compile_cuda(src, frontend=fe)
    assert "ld.global.v4.f32" in ptx and "st.global.v4.f32" in ptx and "ld.global.v2.f32" in ptx
