/* qwengpu CUDA prelude: prepended by qwengpu.toolchain.frontend.compile_cuda
 * to every source, so kernels need no #include. The everyday headers
 * (<cstdint>, <climits>, <cstddef>, <cuda_runtime.h>, ...) resolve to the
 * project's own stubs in include/: what they would declare is defined here.
 *
 * The machine has 4-lane warps: warpSize is 4, and the shuffle width defaults
 * to 4. Shuffles pass PTX's c operand exactly as CUDA computes it for a
 * 32-lane GPU, so __shfl_*_sync(..., width) means the same here as on real
 * hardware (see isa.shfl_source_lane).
 *
 * Floating point: 32-bit floats, compiled as written (the front ends' flags: no
 * contraction, no .ftz; write fmaf for a fused multiply-add); the CUDA math library
 * (expf, sinf, ..., __fadd_rn, __expf, __float2int_rn, ...) is NVIDIA's libdevice
 * under clang (see the float section) and NVRTC's own, the same code; both front
 * ends get <cfloat>/<cmath> constants, std:: math names and float shuffles here.
 *
 * Three builds of this file:
 *   clang-19 (-nocudainc): everything is defined here from clang's NVVM builtins
 *     and libdevice's __nv_* functions.
 *   NVRTC (__CUDACC_RTC__): NVRTC predefines the qualifiers, index variables,
 *     size_t, vector types, atomics and intrinsics; warpSize, the shuffles/votes
 *     and the intrinsics whose PTX the machine lacks (mul24, sad, ffs, byte_perm,
 *     syncthreads_count/and/or, match) are redirected here (macros), and the
 *     atomics go through wrappers that refuse 64-bit words.
 *   QWENGPU_REAL_GPU (set by the cuda engine on top of NVRTC): warp masks
 *     and vote results are mapped onto the thread's 4-lane group of the real
 *     32-lane warp, so a kernel sees the same 4-lane warps there.
 * Every helper is static and always inlined so none of it appears in the PTX
 * (__syncthreads_count/_and/_or add one static __shared__ word when used).
 * Exact CUDA integer semantics, no UB (clang optimises on it): signed results
 * are computed in unsigned arithmetic where they could overflow.
 * Refused with a message at compile time: 64-bit atomics (the machine has
 * 32-bit ones), and under clang the double-precision math functions (fp32 only).
 */
#ifndef QWENGPU_PRELUDE_H
#define QWENGPU_PRELUDE_H

#define QWENGPU 1
/* nodebug: clang's line table gives the prelude's inlined code the line of the user's call, so
 * messages name the user's line (NVRTC ignores it; its inlined_at is followed in ptx.py). */
#define QG_INLINE static __inline__ __attribute__((device, always_inline, nodebug))

#ifndef __CUDACC_RTC__
/* ---------------------------------------------------------------- clang-19 */
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))

/* <cstddef> types (NVRTC predefines these). */
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;

/* CUDA's integer and float vector types (vector_types.h) with their alignments, so
 * int2/int4/... accesses become ld/st .v2/.v4, and make_<type>(). */
#define QG_VEC1(T, E, A) struct __attribute__((aligned(A))) T { E x; };
#define QG_VEC2(T, E, A) struct __attribute__((aligned(A))) T { E x, y; };
#define QG_VEC3(T, E, A) struct __attribute__((aligned(A))) T { E x, y, z; };
#define QG_VEC4(T, E, A) struct __attribute__((aligned(A))) T { E x, y, z, w; };
#define QG_VECTORS(N, E, A1, A2, A3, A4)                                                    \
    QG_VEC1(N##1, E, A1) QG_VEC2(N##2, E, A2) QG_VEC3(N##3, E, A3) QG_VEC4(N##4, E, A4)     \
    QG_INLINE N##1 make_##N##1(E x) { return {x}; }                                         \
    QG_INLINE N##2 make_##N##2(E x, E y) { return {x, y}; }                                 \
    QG_INLINE N##3 make_##N##3(E x, E y, E z) { return {x, y, z}; }                         \
    QG_INLINE N##4 make_##N##4(E x, E y, E z, E w) { return {x, y, z, w}; }
QG_VECTORS(char, signed char, 1, 2, 1, 4)
QG_VECTORS(uchar, unsigned char, 1, 2, 1, 4)
QG_VECTORS(short, short, 2, 4, 2, 8)
QG_VECTORS(ushort, unsigned short, 2, 4, 2, 8)
QG_VECTORS(int, int, 4, 8, 4, 16)
QG_VECTORS(long, long, 4, 8, 4, 16)                       /* long is 32-bit on this target */
QG_VECTORS(ulong, unsigned long, 4, 8, 4, 16)
QG_VECTORS(longlong, long long, 8, 16, 8, 16)
QG_VECTORS(ulonglong, unsigned long long, 8, 16, 8, 16)
QG_VECTORS(float, float, 4, 8, 4, 16)
#undef QG_VECTORS
#undef QG_VEC1
#undef QG_VEC2
#undef QG_VEC3
#undef QG_VEC4
/* uint: uint3 is also threadIdx's type (below). */
struct __attribute__((aligned(4))) uint1 { unsigned int x; };
struct __attribute__((aligned(8))) uint2 { unsigned int x, y; };
struct uint3 { unsigned int x, y, z; };
struct __attribute__((aligned(16))) uint4 { unsigned int x, y, z, w; };
QG_INLINE uint1 make_uint1(unsigned int x) { return {x}; }
QG_INLINE uint2 make_uint2(unsigned int x, unsigned int y) { return {x, y}; }
QG_INLINE uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return {x, y, z}; }
QG_INLINE uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return {x, y, z, w}; }

struct dim3 {
    unsigned int x, y, z;
    __device__ constexpr dim3(unsigned int x = 1, unsigned int y = 1, unsigned int z = 1) : x(x), y(y), z(z) {}
    __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

/* threadIdx.x etc.: an empty object whose .x/.y/.z properties read the PTX
 * special registers. A macro-made temporary (not an extern variable as in
 * clang's own header) keeps every trace of it out of the PTX. */
#define QG_INDEX_TYPE(TYPE, REG)                                                          \
    struct TYPE {                                                                        \
        __device__ __forceinline__ unsigned int get_x() const { return __nvvm_read_ptx_sreg_##REG##_x(); } \
        __device__ __forceinline__ unsigned int get_y() const { return __nvvm_read_ptx_sreg_##REG##_y(); } \
        __device__ __forceinline__ unsigned int get_z() const { return __nvvm_read_ptx_sreg_##REG##_z(); } \
        __declspec(property(get = get_x)) unsigned int x;                                \
        __declspec(property(get = get_y)) unsigned int y;                                \
        __declspec(property(get = get_z)) unsigned int z;                                \
        __device__ __forceinline__ operator uint3() const { return {get_x(), get_y(), get_z()}; } \
        __device__ __forceinline__ operator dim3() const { return dim3(get_x(), get_y(), get_z()); } \
    };
QG_INDEX_TYPE(__qg_threadIdx_t, tid)
QG_INDEX_TYPE(__qg_blockIdx_t, ctaid)
QG_INDEX_TYPE(__qg_blockDim_t, ntid)
QG_INDEX_TYPE(__qg_gridDim_t, nctaid)
#undef QG_INDEX_TYPE
#define threadIdx (__qg_threadIdx_t{})
#define blockIdx (__qg_blockIdx_t{})
#define blockDim (__qg_blockDim_t{})
#define gridDim (__qg_gridDim_t{})

/* Atomics (int and unsigned int; global or shared pointers: the builtins take
 * generic pointers and LLVM infers the state space where it can). */
#define QG_ATOMIC(NAME, T, BUILTIN, BT)                                                     \
    QG_INLINE T NAME(T *address, T val) { return (T)BUILTIN((BT *)address, (BT)val); }
QG_ATOMIC(atomicAdd, int, __nvvm_atom_add_gen_i, int)
QG_ATOMIC(atomicAdd, unsigned int, __nvvm_atom_add_gen_i, int)
QG_ATOMIC(atomicExch, int, __nvvm_atom_xchg_gen_i, int)
QG_ATOMIC(atomicExch, unsigned int, __nvvm_atom_xchg_gen_i, int)
QG_ATOMIC(atomicMin, int, __nvvm_atom_min_gen_i, int)
QG_ATOMIC(atomicMin, unsigned int, __nvvm_atom_min_gen_ui, unsigned int)
QG_ATOMIC(atomicMax, int, __nvvm_atom_max_gen_i, int)
QG_ATOMIC(atomicMax, unsigned int, __nvvm_atom_max_gen_ui, unsigned int)
QG_ATOMIC(atomicAnd, int, __nvvm_atom_and_gen_i, int)
QG_ATOMIC(atomicAnd, unsigned int, __nvvm_atom_and_gen_i, int)
QG_ATOMIC(atomicOr, int, __nvvm_atom_or_gen_i, int)
QG_ATOMIC(atomicOr, unsigned int, __nvvm_atom_or_gen_i, int)
QG_ATOMIC(atomicXor, int, __nvvm_atom_xor_gen_i, int)
QG_ATOMIC(atomicXor, unsigned int, __nvvm_atom_xor_gen_i, int)
QG_ATOMIC(atomicInc, unsigned int, __nvvm_atom_inc_gen_ui, unsigned int)
QG_ATOMIC(atomicDec, unsigned int, __nvvm_atom_dec_gen_ui, unsigned int)
#undef QG_ATOMIC
/* CUDA has no atom.sub: atomicSub adds the two's-complement negation. */
QG_INLINE int atomicSub(int *address, int val) { return __nvvm_atom_add_gen_i(address, (int)(0u - (unsigned int)val)); }
QG_INLINE unsigned int atomicSub(unsigned int *address, unsigned int val) {
    return (unsigned int)__nvvm_atom_add_gen_i((int *)address, (int)(0u - val));
}
QG_INLINE int atomicCAS(int *address, int compare, int val) { return __nvvm_atom_cas_gen_i(address, compare, val); }
QG_INLINE unsigned int atomicCAS(unsigned int *address, unsigned int compare, unsigned int val) {
    return (unsigned int)__nvvm_atom_cas_gen_i((int *)address, (int)compare, (int)val);
}

/* CUDA's 64-bit atomics: the machine has only 32-bit ones, so these overloads
 * exist to be refused with a message naming the call. */
#define QG_NO_ATOMIC64(NAME, T, ...)                                                               \
    __attribute__((unavailable(#NAME " on " #T " is not supported: the qwengpu machine has only "  \
                               "32-bit atomics (int and unsigned int)")))                          \
    QG_INLINE T NAME(T *address, __VA_ARGS__);
QG_NO_ATOMIC64(atomicAdd, unsigned long long, unsigned long long val)
QG_NO_ATOMIC64(atomicExch, unsigned long long, unsigned long long val)
QG_NO_ATOMIC64(atomicCAS, unsigned long long, unsigned long long compare, unsigned long long val)
QG_NO_ATOMIC64(atomicMin, long long, long long val)
QG_NO_ATOMIC64(atomicMin, unsigned long long, unsigned long long val)
QG_NO_ATOMIC64(atomicMax, long long, long long val)
QG_NO_ATOMIC64(atomicMax, unsigned long long, unsigned long long val)
QG_NO_ATOMIC64(atomicAnd, unsigned long long, unsigned long long val)
QG_NO_ATOMIC64(atomicOr, unsigned long long, unsigned long long val)
QG_NO_ATOMIC64(atomicXor, unsigned long long, unsigned long long val)
#undef QG_NO_ATOMIC64

/* Synchronisation. __syncthreads is a clang builtin already. */
QG_INLINE void __syncwarp(unsigned int mask = 0xffffffffu) { __nvvm_bar_warp_sync(mask); }
QG_INLINE void __threadfence() { __nvvm_membar_gl(); }
QG_INLINE void __threadfence_block() { __nvvm_membar_cta(); }
/* CUDA's __trap, as NVRTC has it: PTX trap, which the lowering refuses by name */
QG_INLINE void __trap() { asm volatile("trap;"); }

/* Integer intrinsics, written so they lower to plain ISA ops, with CUDA's
 * overload set (CUDA Math API, "Integer Mathematical Functions"): min/max on
 * each of int, long, long long and their unsigned types, a signed/unsigned mix
 * of one width giving the unsigned type; abs on int, long and long long. */
#define QG_MINMAX(S, U)                                                                     \
    QG_INLINE S min(S a, S b) { return a < b ? a : b; }                                     \
    QG_INLINE U min(U a, U b) { return a < b ? a : b; }                                     \
    QG_INLINE U min(S a, U b) { return min((U)a, b); }                                      \
    QG_INLINE U min(U a, S b) { return min(a, (U)b); }                                      \
    QG_INLINE S max(S a, S b) { return a > b ? a : b; }                                     \
    QG_INLINE U max(U a, U b) { return a > b ? a : b; }                                     \
    QG_INLINE U max(S a, U b) { return max((U)a, b); }                                      \
    QG_INLINE U max(U a, S b) { return max(a, (U)b); }                                      \
    QG_INLINE S abs(S a) { return (S)(a < 0 ? (U)0 - (U)a : (U)a); }  /* abs(MIN) == MIN, no overflow */
QG_MINMAX(int, unsigned int)
QG_MINMAX(long, unsigned long)
QG_MINMAX(long long, unsigned long long)
#undef QG_MINMAX
QG_INLINE unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
QG_INLINE unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
QG_INLINE long long llmin(long long a, long long b) { return a < b ? a : b; }
QG_INLINE long long llmax(long long a, long long b) { return a > b ? a : b; }
QG_INLINE unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
QG_INLINE unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
QG_INLINE long labs(long a) { return abs(a); }
QG_INLINE long long llabs(long long a) { return abs(a); }

QG_INLINE int __popc(unsigned int x) { return __builtin_popcount(x); }
QG_INLINE int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
QG_INLINE unsigned int __brev(unsigned int x) { return __builtin_bitreverse32(x); }
QG_INLINE int __mulhi(int a, int b) { return __nvvm_mulhi_i(a, b); }
QG_INLINE unsigned int __umulhi(unsigned int a, unsigned int b) { return __nvvm_mulhi_ui(a, b); }
/* 64-bit bit counts from the two 32-bit halves. */
QG_INLINE int __popcll(unsigned long long x) { return __popc((unsigned int)x) + __popc((unsigned int)(x >> 32)); }
QG_INLINE int __clzll(long long x) {
    unsigned int hi = (unsigned int)((unsigned long long)x >> 32), lo = (unsigned int)x;
    return hi ? __clz((int)hi) : 32 + __clz((int)lo);
}
QG_INLINE unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned int)x) << 32) | __brev((unsigned int)(x >> 32));
}
QG_INLINE long long __mul64hi(long long a, long long b) { return __nvvm_mulhi_ll(a, b); }
QG_INLINE unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return __nvvm_mulhi_ull(a, b); }
/* Averages without overflow: floor((x + y) / 2) and, rounded, floor((x + y + 1) / 2).
 * x & y + (x ^ y) >> 1 is exact (arithmetic shift for signed), summed unsigned. */
QG_INLINE int __hadd(int x, int y) { return (int)((unsigned int)(x & y) + (unsigned int)((x ^ y) >> 1)); }
QG_INLINE int __rhadd(int x, int y) { return (int)((unsigned int)(x | y) - (unsigned int)((x ^ y) >> 1)); }
QG_INLINE unsigned int __uhadd(unsigned int x, unsigned int y) { return (x & y) + ((x ^ y) >> 1); }
QG_INLINE unsigned int __urhadd(unsigned int x, unsigned int y) { return (x | y) - ((x ^ y) >> 1); }
/* Funnel shifts over the 64-bit pair hi:lo. _l: the high word of hi:lo << n,
 * _r: the low word of hi:lo >> n; n = shift & 31, or min(shift, 32) for _lc/_rc.
 * The shifted-out word moves by (32 - n) as >> 1 >> (31 - n) (no shift by 32). */
QG_INLINE unsigned int __qg_fshl(unsigned int lo, unsigned int hi, unsigned int n) {
    return (hi << n) | ((lo >> 1) >> (31u - n));
}
QG_INLINE unsigned int __qg_fshr(unsigned int lo, unsigned int hi, unsigned int n) {
    return (lo >> n) | ((hi << 1) << (31u - n));
}
QG_INLINE unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) { return __qg_fshl(lo, hi, shift & 31u); }
QG_INLINE unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) { return __qg_fshr(lo, hi, shift & 31u); }
QG_INLINE unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
    return shift >= 32u ? lo : __qg_fshl(lo, hi, shift);
}
QG_INLINE unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
    return shift >= 32u ? hi : __qg_fshr(lo, hi, shift);
}
/* __ldg: a read-only-cache load is a plain load here (one memory). */
template <typename T> QG_INLINE T __ldg(const T *p) { return *p; }

/* ------------------------------------------------ float (clang): CUDA's fp32 API */
/* CUDA's single-precision math API (CUDA Math API, "Single Precision Mathematical
 * Functions", "Single Precision Intrinsics", "Type Casting Intrinsics") on NVIDIA's
 * libdevice, as clang's own CUDA headers do: each function calls its __nv_* twin,
 * which frontend.py links from the nvidia-nvvm wheel (only the functions a kernel
 * calls; NVRTC has the same library built in). Besides the C names (expf), CUDA's
 * float overloads of the C++ names (exp(float), abs(float), min(float, float)).
 * The double versions are declared unavailable, so exp(1.0) or sqrt(d) is a compile
 * error that says so, not a silent conversion to float (qwengpu runs fp32; NVRTC,
 * which has them built in, compiles them to f64 PTX, which lowering refuses).
 * Round-toward-zero conversions are inline PTX: clang-19 compiles nvvm's
 * i2f.rz/ui2f.rz/ll2f.rz/ull2f.rz as round-to-nearest, and folds out-of-range
 * f2i.rz & co. as undefined instead of saturating (LLVM fixed both after 19). */
#define QG_NO_DOUBLE_MSG(NAME) \
    #NAME "(double): double precision is not supported (qwengpu runs 32-bit floats): call " #NAME "f or pass a float"
#define QG_NO_DOUBLE(NAME, R, ...) __device__ __attribute__((unavailable(QG_NO_DOUBLE_MSG(NAME)))) R NAME(__VA_ARGS__);
/* NAMEf(float) and NAME(float) from __nv_NAMEf; NAME(double) unavailable. */
#define QG_MATH1(NAME)                                                                     \
    extern "C" __device__ float __nv_##NAME##f(float);                                     \
    QG_INLINE float NAME##f(float x) { return __nv_##NAME##f(x); }                         \
    QG_INLINE float NAME(float x) { return __nv_##NAME##f(x); }                            \
    QG_NO_DOUBLE(NAME, double, double)
#define QG_MATH2(NAME)                                                                     \
    extern "C" __device__ float __nv_##NAME##f(float, float);                              \
    QG_INLINE float NAME##f(float x, float y) { return __nv_##NAME##f(x, y); }             \
    QG_INLINE float NAME(float x, float y) { return __nv_##NAME##f(x, y); }                \
    QG_NO_DOUBLE(NAME, double, double, double)
QG_MATH1(acos) QG_MATH1(acosh) QG_MATH1(asin) QG_MATH1(asinh) QG_MATH1(atan) QG_MATH1(atanh)
QG_MATH1(cbrt) QG_MATH1(ceil) QG_MATH1(cos) QG_MATH1(cosh) QG_MATH1(cospi) QG_MATH1(cyl_bessel_i0)
QG_MATH1(cyl_bessel_i1) QG_MATH1(erf) QG_MATH1(erfc) QG_MATH1(erfcinv) QG_MATH1(erfcx) QG_MATH1(erfinv)
QG_MATH1(exp) QG_MATH1(exp10) QG_MATH1(exp2) QG_MATH1(expm1) QG_MATH1(fabs) QG_MATH1(floor)
QG_MATH1(j0) QG_MATH1(j1) QG_MATH1(lgamma) QG_MATH1(log) QG_MATH1(log10) QG_MATH1(log1p)
QG_MATH1(log2) QG_MATH1(logb) QG_MATH1(nearbyint) QG_MATH1(normcdf) QG_MATH1(normcdfinv)
QG_MATH1(rcbrt) QG_MATH1(rint) QG_MATH1(round) QG_MATH1(rsqrt) QG_MATH1(sin) QG_MATH1(sinh)
QG_MATH1(sinpi) QG_MATH1(sqrt) QG_MATH1(tan) QG_MATH1(tanh) QG_MATH1(tgamma) QG_MATH1(trunc)
QG_MATH1(y0) QG_MATH1(y1)
QG_MATH2(atan2) QG_MATH2(fdim) QG_MATH2(fmax) QG_MATH2(fmin) QG_MATH2(fmod)
QG_MATH2(hypot) QG_MATH2(nextafter) QG_MATH2(pow) QG_MATH2(remainder)
#undef QG_MATH1
#undef QG_MATH2
/* copysign moves bits, as NVRTC's copysign.f32 does (a NaN keeps its payload); libdevice's,
 * through abs and neg, would give the canonical NaN instead. PTX: d = b's magnitude, a's sign. */
QG_INLINE float copysignf(float x, float y) {
    float r;
    asm("copysign.f32 %0, %1, %2;" : "=f"(r) : "f"(y), "f"(x));
    return r;
}
QG_INLINE float copysign(float x, float y) { return copysignf(x, y); }
QG_NO_DOUBLE(copysign, double, double, double)
/* CUDA has rhypotf but no float overload of rhypot. */
extern "C" __device__ float __nv_rhypotf(float, float);
QG_INLINE float rhypotf(float x, float y) { return __nv_rhypotf(x, y); }
QG_NO_DOUBLE(rhypot, double, double, double)
/* The rest of the set, with their C++ float overloads where CUDA has them. */
extern "C" __device__ float __nv_fmaf(float, float, float);
QG_INLINE float fmaf(float x, float y, float z) { return __nv_fmaf(x, y, z); }
QG_INLINE float fma(float x, float y, float z) { return __nv_fmaf(x, y, z); }
QG_NO_DOUBLE(fma, double, double, double, double)
extern "C" __device__ float __nv_powif(float, int);
QG_INLINE float pow(float x, int n) { return __nv_powif(x, n); }      /* CUDA's pow(float, int): powi */
QG_NO_DOUBLE(pow, double, double, int)
QG_INLINE float fdividef(float x, float y) { return x / y; }          /* div.rn, as CUDA without fast math */
extern "C" __device__ float __nv_ldexpf(float, int);
extern "C" __device__ float __nv_scalbnf(float, int);
extern "C" __device__ float __nv_frexpf(float, int *);
extern "C" __device__ float __nv_modff(float, float *);
extern "C" __device__ float __nv_remquof(float, float, int *);
extern "C" __device__ int __nv_ilogbf(float);
extern "C" __device__ long long __nv_llrintf(float);
extern "C" __device__ long long __nv_llroundf(float);
extern "C" __device__ void __nv_sincosf(float, float *, float *);
extern "C" __device__ void __nv_sincospif(float, float *, float *);
QG_INLINE float ldexpf(float x, int n) { return __nv_ldexpf(x, n); }
QG_INLINE float ldexp(float x, int n) { return __nv_ldexpf(x, n); }
QG_NO_DOUBLE(ldexp, double, double, int)
QG_INLINE float scalbnf(float x, int n) { return __nv_scalbnf(x, n); }
QG_INLINE float scalbn(float x, int n) { return __nv_scalbnf(x, n); }
QG_NO_DOUBLE(scalbn, double, double, int)
QG_INLINE float scalblnf(float x, long n) {        /* long is 32-bit here; clamped as CUDA does for 64-bit long */
    return __nv_scalbnf(x, n > 2147483647L ? 2147483647 : n < -2147483647L - 1 ? -2147483647 - 1 : (int)n);
}
QG_INLINE float scalbln(float x, long n) { return scalblnf(x, n); }
QG_NO_DOUBLE(scalbln, double, double, long)
QG_INLINE float frexpf(float x, int *e) { return __nv_frexpf(x, e); }
QG_INLINE float frexp(float x, int *e) { return __nv_frexpf(x, e); }
QG_NO_DOUBLE(frexp, double, double, int *)
QG_INLINE float modff(float x, float *i) { return __nv_modff(x, i); }
QG_INLINE float modf(float x, float *i) { return __nv_modff(x, i); }
QG_NO_DOUBLE(modf, double, double, double *)
QG_INLINE float remquof(float x, float y, int *q) { return __nv_remquof(x, y, q); }
QG_INLINE float remquo(float x, float y, int *q) { return __nv_remquof(x, y, q); }
QG_NO_DOUBLE(remquo, double, double, double, int *)
QG_INLINE int ilogbf(float x) { return __nv_ilogbf(x); }
QG_INLINE int ilogb(float x) { return __nv_ilogbf(x); }
QG_NO_DOUBLE(ilogb, int, double)
QG_INLINE long long llrintf(float x) { return __nv_llrintf(x); }
QG_INLINE long long llrint(float x) { return __nv_llrintf(x); }
QG_NO_DOUBLE(llrint, long long, double)
QG_INLINE long long llroundf(float x) { return __nv_llroundf(x); }
QG_INLINE long long llround(float x) { return __nv_llroundf(x); }
QG_NO_DOUBLE(llround, long long, double)
QG_INLINE long lrintf(float x) { return (long)__nv_llrintf(x); }      /* long: 32-bit under clang, 64 under NVRTC */
QG_INLINE long lrint(float x) { return (long)__nv_llrintf(x); }
QG_NO_DOUBLE(lrint, long, double)
QG_INLINE long lroundf(float x) { return (long)__nv_llroundf(x); }
QG_INLINE long lround(float x) { return (long)__nv_llroundf(x); }
QG_NO_DOUBLE(lround, long, double)
QG_INLINE void sincosf(float x, float *s, float *c) { __nv_sincosf(x, s, c); }
QG_INLINE void sincos(float x, float *s, float *c) { __nv_sincosf(x, s, c); }
QG_NO_DOUBLE(sincos, void, double, double *, double *)
QG_INLINE void sincospif(float x, float *s, float *c) { __nv_sincospif(x, s, c); }
QG_INLINE void sincospi(float x, float *s, float *c) { __nv_sincospif(x, s, c); }
QG_NO_DOUBLE(sincospi, void, double, double *, double *)
extern "C" __device__ float __nv_nanf(const signed char *);
QG_INLINE float nanf(const char *tag) { return __nv_nanf((const signed char *)tag); }
extern "C" __device__ float __nv_jnf(int, float);
extern "C" __device__ float __nv_ynf(int, float);
QG_INLINE float jnf(int n, float x) { return __nv_jnf(n, x); }
QG_INLINE float ynf(int n, float x) { return __nv_ynf(n, x); }
extern "C" __device__ float __nv_norm3df(float, float, float);
extern "C" __device__ float __nv_rnorm3df(float, float, float);
extern "C" __device__ float __nv_norm4df(float, float, float, float);
extern "C" __device__ float __nv_rnorm4df(float, float, float, float);
extern "C" __device__ float __nv_normf(int, const float *);
extern "C" __device__ float __nv_rnormf(int, const float *);
QG_INLINE float norm3df(float a, float b, float c) { return __nv_norm3df(a, b, c); }
QG_INLINE float rnorm3df(float a, float b, float c) { return __nv_rnorm3df(a, b, c); }
QG_INLINE float norm4df(float a, float b, float c, float d) { return __nv_norm4df(a, b, c, d); }
QG_INLINE float rnorm4df(float a, float b, float c, float d) { return __nv_rnorm4df(a, b, c, d); }
QG_INLINE float normf(int n, const float *a) { return __nv_normf(n, a); }
QG_INLINE float rnormf(int n, const float *a) { return __nv_rnormf(n, a); }
/* CUDA's float min/max and abs overloads. */
QG_INLINE float min(float a, float b) { return __nv_fminf(a, b); }
QG_INLINE float max(float a, float b) { return __nv_fmaxf(a, b); }
QG_INLINE float abs(float a) { return __nv_fabsf(a); }
QG_NO_DOUBLE(min, double, double, double)
QG_NO_DOUBLE(max, double, double, double)
QG_NO_DOUBLE(abs, double, double)
/* Classification: int results, as CUDA's. */
extern "C" __device__ int __nv_isnanf(float);
extern "C" __device__ int __nv_isinff(float);
extern "C" __device__ int __nv_finitef(float);
extern "C" __device__ int __nv_signbitf(float);
QG_INLINE int __isnanf(float x) { return __nv_isnanf(x); }
QG_INLINE int __isinff(float x) { return __nv_isinff(x); }
QG_INLINE int __finitef(float x) { return __nv_finitef(x); }
QG_INLINE int __signbitf(float x) { return __nv_signbitf(x); }
QG_INLINE int isnan(float x) { return __nv_isnanf(x); }
QG_INLINE int isinf(float x) { return __nv_isinff(x); }
QG_INLINE int isfinite(float x) { return __nv_finitef(x); }
QG_INLINE int signbit(float x) { return __nv_signbitf(x); }
QG_NO_DOUBLE(isnan, int, double)
QG_NO_DOUBLE(isinf, int, double)
QG_NO_DOUBLE(isfinite, int, double)
QG_NO_DOUBLE(signbit, int, double)
#undef QG_NO_DOUBLE
#undef QG_NO_DOUBLE_MSG

/* Intrinsics with a rounding mode (_rn nearest even, _rz toward zero, _rd down, _ru up),
 * and the fast approximate ones (ex2/lg2/sin/cos/tanh.approx, div.approx). */
#define QG_ROUNDED(RND)                                                                          \
    extern "C" __device__ float __nv_fadd_##RND(float, float);                                   \
    extern "C" __device__ float __nv_fsub_##RND(float, float);                                   \
    extern "C" __device__ float __nv_fmul_##RND(float, float);                                   \
    extern "C" __device__ float __nv_fdiv_##RND(float, float);                                   \
    extern "C" __device__ float __nv_fmaf_##RND(float, float, float);                            \
    extern "C" __device__ float __nv_fmaf_ieee_##RND(float, float, float);                       \
    extern "C" __device__ float __nv_frcp_##RND(float);                                          \
    extern "C" __device__ float __nv_fsqrt_##RND(float);                                         \
    QG_INLINE float __fadd_##RND(float x, float y) { return __nv_fadd_##RND(x, y); }             \
    QG_INLINE float __fsub_##RND(float x, float y) { return __nv_fsub_##RND(x, y); }             \
    QG_INLINE float __fmul_##RND(float x, float y) { return __nv_fmul_##RND(x, y); }             \
    QG_INLINE float __fdiv_##RND(float x, float y) { return __nv_fdiv_##RND(x, y); }             \
    QG_INLINE float __fmaf_##RND(float x, float y, float z) { return __nv_fmaf_##RND(x, y, z); } \
    QG_INLINE float __fmaf_ieee_##RND(float x, float y, float z) { return __nv_fmaf_ieee_##RND(x, y, z); } \
    QG_INLINE float __frcp_##RND(float x) { return __nv_frcp_##RND(x); }                         \
    QG_INLINE float __fsqrt_##RND(float x) { return __nv_fsqrt_##RND(x); }
QG_ROUNDED(rn) QG_ROUNDED(rz) QG_ROUNDED(rd) QG_ROUNDED(ru)
#undef QG_ROUNDED
extern "C" __device__ float __nv_frsqrt_rn(float);
extern "C" __device__ float __nv_saturatef(float);
QG_INLINE float __frsqrt_rn(float x) { return __nv_frsqrt_rn(x); }
QG_INLINE float __saturatef(float x) { return __nv_saturatef(x); }
#define QG_FAST1(NAME)                                                                     \
    extern "C" __device__ float __nv_fast_##NAME##f(float);                                \
    QG_INLINE float __##NAME##f(float x) { return __nv_fast_##NAME##f(x); }
QG_FAST1(exp) QG_FAST1(exp10) QG_FAST1(log) QG_FAST1(log2) QG_FAST1(log10)
QG_FAST1(sin) QG_FAST1(cos) QG_FAST1(tan)
#undef QG_FAST1
/* __tanhf: tanh.approx.f32 (sm_75); libdevice's __nv_fast_tanhf calls an NVVM intrinsic
 * clang-19 does not know. */
QG_INLINE float __tanhf(float x) {
    float r;
    asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
extern "C" __device__ float __nv_fast_powf(float, float);
extern "C" __device__ float __nv_fast_fdividef(float, float);
extern "C" __device__ void __nv_fast_sincosf(float, float *, float *);
QG_INLINE float __powf(float x, float y) { return __nv_fast_powf(x, y); }
QG_INLINE float __fdividef(float x, float y) { return __nv_fast_fdividef(x, y); }
QG_INLINE void __sincosf(float x, float *s, float *c) { __nv_fast_sincosf(x, s, c); }

/* Type casting intrinsics. Bit casts, then conversions with a rounding mode (float ->
 * integer: saturating, NaN -> 0, or 1 << 63 for 64-bit results, as PTX cvt defines). */
QG_INLINE int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
QG_INLINE unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }
QG_INLINE float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
QG_INLINE float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }
#define QG_CVT(NAME, RND, D, S)                                                            \
    extern "C" __device__ D __nv_##NAME##_##RND(S);                                        \
    QG_INLINE D __##NAME##_##RND(S x) { return __nv_##NAME##_##RND(x); }
#define QG_CVT_RZ(NAME, D, S, PTX, DC, SC)                                                 \
    QG_INLINE D __##NAME##_rz(S x) {                                                       \
        D r;                                                                               \
        asm("cvt." PTX " %0, %1;" : "=" DC(r) : SC(x));                                    \
        return r;                                                                          \
    }
#define QG_CVTS(NAME, D, S, PTX, DC, SC)                                                   \
    QG_CVT(NAME, rn, D, S) QG_CVT(NAME, rd, D, S) QG_CVT(NAME, ru, D, S)                   \
    QG_CVT_RZ(NAME, D, S, PTX, DC, SC)
QG_CVTS(float2int, int, float, "rzi.s32.f32", "r", "f")
QG_CVTS(float2uint, unsigned int, float, "rzi.u32.f32", "r", "f")
QG_CVTS(float2ll, long long, float, "rzi.s64.f32", "l", "f")
QG_CVTS(float2ull, unsigned long long, float, "rzi.u64.f32", "l", "f")
QG_CVTS(int2float, float, int, "rz.f32.s32", "f", "r")
QG_CVTS(uint2float, float, unsigned int, "rz.f32.u32", "f", "r")
QG_CVTS(ll2float, float, long long, "rz.f32.s64", "f", "l")
QG_CVTS(ull2float, float, unsigned long long, "rz.f32.u64", "f", "l")
#undef QG_CVTS
#undef QG_CVT_RZ
#undef QG_CVT

/* Float atomics (NVRTC has them): atom.add.f32, and exchange as a 32-bit word. */
QG_INLINE float atomicAdd(float *address, float val) { return __nvvm_atom_add_gen_f(address, val); }
QG_INLINE float atomicExch(float *address, float val) {
    return __int_as_float(__nvvm_atom_xchg_gen_i((int *)address, __float_as_int(val)));
}

/* Warp-op primitives used by the common section below. */
#define QG_SHFL(MODE, mask, v, b, c) __nvvm_shfl_sync_##MODE##_i32(mask, v, b, c)
#define QG_BALLOT(mask, p) __nvvm_vote_ballot_sync(mask, p)
#define QG_ANY(mask, p) __nvvm_vote_any_sync(mask, p)
#define QG_ALL(mask, p) __nvvm_vote_all_sync(mask, p)
#define QG_ACTIVEMASK() __nvvm_activemask()
#define QG_WARP_MASK(mask) (mask)
#define QG_WARP_BITS(bits) (bits)

#else
/* ------------------------------------------------------------------- NVRTC */
/* NVRTC's own shuffles default width to its warpSize (32): redirect the warp
 * functions to ours (below), built on inline PTX. */
#define QG_SHFL_ASM(MODE)                                                                \
    QG_INLINE int __qg_shfl_##MODE(unsigned int mask, int v, int b, int c) {              \
        int r;                                                                            \
        asm volatile("shfl.sync." #MODE ".b32 %0, %1, %2, %3, %4;"                        \
                     : "=r"(r) : "r"(v), "r"(b), "r"(c), "r"(mask));                      \
        return r;                                                                         \
    }
QG_SHFL_ASM(idx)
QG_SHFL_ASM(up)
QG_SHFL_ASM(down)
QG_SHFL_ASM(bfly)
#undef QG_SHFL_ASM
#define QG_VOTE_ASM(MODE)                                                                 \
    QG_INLINE int __qg_vote_##MODE(unsigned int mask, int p) {                             \
        int r;                                                                             \
        asm volatile("{ .reg .pred p, q; setp.ne.s32 p, %1, 0; vote.sync." #MODE ".pred q, p, %2; selp.s32 %0, 1, 0, q; }" \
                     : "=r"(r) : "r"(p), "r"(mask));                                       \
        return r;                                                                          \
    }
QG_VOTE_ASM(any)
QG_VOTE_ASM(all)
#undef QG_VOTE_ASM
QG_INLINE unsigned int __qg_vote_ballot(unsigned int mask, int p) {
    unsigned int r;
    asm volatile("{ .reg .pred p; setp.ne.s32 p, %1, 0; vote.sync.ballot.b32 %0, p, %2; }"
                 : "=r"(r) : "r"(p), "r"(mask));
    return r;
}
QG_INLINE unsigned int __qg_activemask_raw() {
    unsigned int r;
    asm volatile("activemask.b32 %0;" : "=r"(r));
    return r;
}
#define QG_SHFL(MODE, mask, v, b, c) __qg_shfl_##MODE(mask, v, b, c)
#define QG_BALLOT(mask, p) __qg_vote_ballot(mask, p)
#define QG_ANY(mask, p) __qg_vote_any(mask, p)
#define QG_ALL(mask, p) __qg_vote_all(mask, p)
#define QG_ACTIVEMASK() __qg_activemask_raw()
#ifdef QWENGPU_REAL_GPU
/* On a real 32-lane warp a qwengpu warp is one aligned group of 4 lanes:
 * member masks are moved onto the thread's group, lane bit sets moved back. */
QG_INLINE unsigned int __qg_group_shift() {
    unsigned int lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane & ~3u;
}
#define QG_WARP_MASK(mask) (((mask) & 0xfu) << __qg_group_shift())
#define QG_WARP_BITS(bits) (((bits) >> __qg_group_shift()) & 0xfu)
QG_INLINE void __qg_syncwarp(unsigned int mask = 0xffffffffu) {
    asm volatile("bar.warp.sync %0;" : : "r"(QG_WARP_MASK(mask)));
}
#define __syncwarp __qg_syncwarp
#else
#define QG_WARP_MASK(mask) (mask)
#define QG_WARP_BITS(bits) (bits)
#endif
#define __shfl_sync __qg_shfl_sync
#define __shfl_up_sync __qg_shfl_up_sync
#define __shfl_down_sync __qg_shfl_down_sync
#define __shfl_xor_sync __qg_shfl_xor_sync
#define __ballot_sync __qg_ballot_sync
#define __any_sync __qg_any_sync
#define __all_sync __qg_all_sync
#define __activemask __qg_activemask
/* The machine has only 32-bit atomics: NVRTC's 64-bit (and 16-bit) overloads
 * are refused at compile time with a message, not at lowering. The wrappers
 * are defined before the macros, so they call NVRTC's own functions. */
#define QG_ATOMIC_WORD(NAME)                                                                       \
    template <typename T, typename... R> QG_INLINE T __qg_##NAME(T *address, R... args) {          \
        static_assert(sizeof(T) == 4, #NAME " on a 64-bit (or 16-bit) word is not supported: the " \
                      "qwengpu machine has only 32-bit atomics (int and unsigned int)");           \
        return NAME(address, args...);                                                             \
    }
QG_ATOMIC_WORD(atomicAdd)
QG_ATOMIC_WORD(atomicSub)
QG_ATOMIC_WORD(atomicExch)
QG_ATOMIC_WORD(atomicMin)
QG_ATOMIC_WORD(atomicMax)
QG_ATOMIC_WORD(atomicInc)
QG_ATOMIC_WORD(atomicDec)
QG_ATOMIC_WORD(atomicCAS)
QG_ATOMIC_WORD(atomicAnd)
QG_ATOMIC_WORD(atomicOr)
QG_ATOMIC_WORD(atomicXor)
#undef QG_ATOMIC_WORD
#define atomicAdd(...) __qg_atomicAdd(__VA_ARGS__)
#define atomicSub(...) __qg_atomicSub(__VA_ARGS__)
#define atomicExch(...) __qg_atomicExch(__VA_ARGS__)
#define atomicMin(...) __qg_atomicMin(__VA_ARGS__)
#define atomicMax(...) __qg_atomicMax(__VA_ARGS__)
#define atomicInc(...) __qg_atomicInc(__VA_ARGS__)
#define atomicDec(...) __qg_atomicDec(__VA_ARGS__)
#define atomicCAS(...) __qg_atomicCAS(__VA_ARGS__)
#define atomicAnd(...) __qg_atomicAnd(__VA_ARGS__)
#define atomicOr(...) __qg_atomicOr(__VA_ARGS__)
#define atomicXor(...) __qg_atomicXor(__VA_ARGS__)
#endif

/* ------------------------------------------------------------------ common */
/* <cstdint>/<stdint.h>, <climits>/<limits.h> (the include/ stubs add nothing):
 * each front end's own host ABI, 32-bit long under clang (i386), 64-bit under NVRTC. */
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
#ifdef __CUDACC_RTC__
typedef long int64_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
typedef long int_fast16_t;
typedef long int_fast32_t;
typedef unsigned long uint_fast16_t;
typedef unsigned long uint_fast32_t;
#define QG_INT64_C(v) v##L
#define QG_UINT64_C(v) v##UL
#define LONG_MAX 9223372036854775807L
#define SIZE_MAX 18446744073709551615UL
#else
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef __INTPTR_TYPE__ intptr_t;
typedef __UINTPTR_TYPE__ uintptr_t;
typedef int int_fast16_t;
typedef int int_fast32_t;
typedef unsigned int uint_fast16_t;
typedef unsigned int uint_fast32_t;
#define QG_INT64_C(v) v##LL
#define QG_UINT64_C(v) v##ULL
#define LONG_MAX __LONG_MAX__
#define SIZE_MAX __SIZE_MAX__
#endif
typedef int8_t int_least8_t;
typedef int16_t int_least16_t;
typedef int32_t int_least32_t;
typedef int64_t int_least64_t;
typedef uint8_t uint_least8_t;
typedef uint16_t uint_least16_t;
typedef uint32_t uint_least32_t;
typedef uint64_t uint_least64_t;
typedef int8_t int_fast8_t;
typedef int64_t int_fast64_t;
typedef uint8_t uint_fast8_t;
typedef uint64_t uint_fast64_t;
typedef int64_t intmax_t;
typedef uint64_t uintmax_t;
namespace std {
using ::size_t; using ::ptrdiff_t; typedef decltype(nullptr) nullptr_t;
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
using ::int_least8_t; using ::int_least16_t; using ::int_least32_t; using ::int_least64_t;
using ::uint_least8_t; using ::uint_least16_t; using ::uint_least32_t; using ::uint_least64_t;
using ::int_fast8_t; using ::int_fast16_t; using ::int_fast32_t; using ::int_fast64_t;
using ::uint_fast8_t; using ::uint_fast16_t; using ::uint_fast32_t; using ::uint_fast64_t;
using ::intptr_t; using ::uintptr_t; using ::intmax_t; using ::uintmax_t;
}
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#ifdef __CHAR_UNSIGNED__
#define CHAR_MIN 0
#define CHAR_MAX 255
#else
#define CHAR_MIN (-128)
#define CHAR_MAX 127
#endif
#define SHRT_MIN (-32767 - 1)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647 - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MIN (-LONG_MAX - 1L)
#define ULONG_MAX (LONG_MAX * 2UL + 1UL)
#define LLONG_MIN (-9223372036854775807LL - 1LL)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32767 - 1)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295U
#define INT64_MIN (-QG_INT64_C(9223372036854775807) - 1)
#define INT64_MAX QG_INT64_C(9223372036854775807)
#define UINT64_MAX QG_UINT64_C(18446744073709551615)
#define INTMAX_MIN INT64_MIN
#define INTMAX_MAX INT64_MAX
#define UINTMAX_MAX UINT64_MAX
#define INTPTR_MIN LONG_MIN
#define INTPTR_MAX LONG_MAX
#define UINTPTR_MAX ULONG_MAX
#define PTRDIFF_MIN LONG_MIN
#define PTRDIFF_MAX LONG_MAX
#define INT8_C(v) v
#define INT16_C(v) v
#define INT32_C(v) v
#define INT64_C(v) QG_INT64_C(v)
#define UINT8_C(v) v
#define UINT16_C(v) v
#define UINT32_C(v) v##U
#define UINT64_C(v) QG_UINT64_C(v)
#define INTMAX_C(v) QG_INT64_C(v)
#define UINTMAX_C(v) QG_UINT64_C(v)

/* <cfloat>/<float.h> and <cmath>/<math.h> constants (neither front end defines
 * them). __builtin_bit_cast keeps INFINITY and NAN constant expressions on both.
 * M_PI & co. are double, as in C: x * M_PI is double arithmetic (refused by the
 * machine); write (float)M_PI, or CUDART_PI_F from <math_constants.h>. */
#define INFINITY __builtin_bit_cast(float, 0x7f800000u)
#define HUGE_VALF INFINITY
#define NAN __builtin_bit_cast(float, 0x7fc00000u)
#define HUGE_VAL __builtin_bit_cast(double, 0x7ff0000000000000ull)
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define FLT_DIG 6
#define FLT_DECIMAL_DIG 9
#define FLT_MIN_EXP (-125)
#define FLT_MAX_EXP 128
#define FLT_MIN_10_EXP (-37)
#define FLT_MAX_10_EXP 38
#define FLT_MAX 3.40282347e+38F
#define FLT_MIN 1.17549435e-38F
#define FLT_EPSILON 1.19209290e-07F
#define FLT_TRUE_MIN 1.40129846e-45F
#define FLT_EVAL_METHOD 0
#define FLT_ROUNDS 1
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
/* <cmath>'s std:: names: the global functions (CUDA's float overloads among them). */
namespace std {
using ::abs; using ::acos; using ::acosf; using ::acosh; using ::acoshf; using ::asin; using ::asinf;
using ::asinh; using ::asinhf; using ::atan; using ::atan2; using ::atan2f; using ::atanf; using ::atanh;
using ::atanhf; using ::cbrt; using ::cbrtf; using ::ceil; using ::ceilf; using ::copysign;
using ::copysignf; using ::cos; using ::cosf; using ::cosh; using ::coshf; using ::erf; using ::erfc;
using ::erfcf; using ::erff; using ::exp; using ::exp2; using ::exp2f; using ::expf; using ::expm1;
using ::expm1f; using ::fabs; using ::fabsf; using ::fdim; using ::fdimf; using ::floor; using ::floorf;
using ::fma; using ::fmaf; using ::fmax; using ::fmaxf; using ::fmin; using ::fminf; using ::fmod;
using ::fmodf; using ::frexp; using ::frexpf; using ::hypot; using ::hypotf; using ::ilogb; using ::ilogbf;
using ::isfinite; using ::isinf; using ::isnan; using ::ldexp; using ::ldexpf; using ::lgamma;
using ::lgammaf; using ::llrint; using ::llrintf; using ::llround; using ::llroundf; using ::log;
using ::log10; using ::log10f; using ::log1p; using ::log1pf; using ::log2; using ::log2f; using ::logb;
using ::logbf; using ::logf; using ::lrint; using ::lrintf; using ::lround; using ::lroundf; using ::modf;
using ::modff; using ::nanf; using ::nearbyint; using ::nearbyintf; using ::nextafter; using ::nextafterf;
using ::pow; using ::powf; using ::remainder; using ::remainderf; using ::remquo; using ::remquof;
using ::rint; using ::rintf; using ::round; using ::roundf; using ::scalbln; using ::scalblnf;
using ::scalbn; using ::scalbnf; using ::signbit; using ::sin; using ::sinf; using ::sinh; using ::sinhf;
using ::sqrt; using ::sqrtf; using ::tan; using ::tanf; using ::tanh; using ::tanhf; using ::tgamma;
using ::tgammaf; using ::trunc; using ::truncf;
}

/* PTX has mul24, sad, bfind, prmt with a register selector, bar.red and match,
 * the machine does not: spell these in plain integer ops (also under NVRTC,
 * whose own versions emit them) and redirect the names here. */
/* __mul24: low 32 bits of the 48-bit product of the sign-extended low 24 bits
 * (PTX mul24.lo.s32), multiplied unsigned: no signed overflow. */
QG_INLINE int __qg_mul24(int a, int b) {
    return (int)((unsigned int)((int)((unsigned int)a << 8) >> 8) * (unsigned int)((int)((unsigned int)b << 8) >> 8));
}
QG_INLINE unsigned int __qg_umul24(unsigned int a, unsigned int b) { return (a & 0xffffffu) * (b & 0xffffffu); }
/* __sad: |a - b| + c, computed without signed overflow. */
QG_INLINE unsigned int __qg_sad(int a, int b, unsigned int c) {
    return (a > b ? (unsigned int)a - (unsigned int)b : (unsigned int)b - (unsigned int)a) + c;
}
QG_INLINE unsigned int __qg_usad(unsigned int a, unsigned int b, unsigned int c) { return (a > b ? a - b : b - a) + c; }
/* __ffs: 1 + index of the lowest set bit (0 for 0), as popc of the bits below it
 * (NVRTC's version emits bfind). */
QG_INLINE int __qg_ffs(int x) {
    unsigned int u = (unsigned int)x;
    return u ? __popc((u & (0u - u)) - 1u) + 1 : 0;
}
#ifndef __CUDACC_RTC__
QG_INLINE int __ffsll(long long x) {
    unsigned int lo = (unsigned int)x, hi = (unsigned int)((unsigned long long)x >> 32);
    return lo ? __qg_ffs((int)lo) : hi ? 32 + __qg_ffs((int)hi) : 0;
}
#endif
/* __byte_perm(x, y, s) as CUDA defines it: result byte n is byte
 * (s >> 4n) & 7 of the 8 bytes y:x (bit 3 of each selector nibble is unused). */
QG_INLINE unsigned int __qg_perm_byte(unsigned int x, unsigned int y, unsigned int k) {
    return (((k & 4u) ? y : x) >> ((k & 3u) * 8u)) & 0xffu;
}
QG_INLINE unsigned int __qg_byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    return __qg_perm_byte(x, y, s) | (__qg_perm_byte(x, y, s >> 4) << 8) |
           (__qg_perm_byte(x, y, s >> 8) << 16) | (__qg_perm_byte(x, y, s >> 12) << 24);
}
/* __syncthreads_count/_and/_or: a barrier that also counts the threads of the
 * block whose predicate is nonzero; every thread gets the count. Built on a
 * static __shared__ word: barrier (earlier readers are done), clear, barrier,
 * add, barrier, read. */
QG_INLINE int __qg_syncthreads_count(int predicate) {
    __shared__ unsigned int count;
    __syncthreads();
    atomicExch(&count, 0u);
    __syncthreads();
    atomicAdd(&count, predicate != 0 ? 1u : 0u);
    __syncthreads();
    return (int)*(volatile unsigned int *)&count;
}
QG_INLINE int __qg_syncthreads_and(int predicate) {
    return (unsigned int)__qg_syncthreads_count(predicate) == blockDim.x * blockDim.y * blockDim.z;
}
QG_INLINE int __qg_syncthreads_or(int predicate) { return __qg_syncthreads_count(predicate) != 0; }
#define __ffs __qg_ffs
#define __mul24 __qg_mul24
#define __umul24 __qg_umul24
#define __sad __qg_sad
#define __usad __qg_usad
#define __byte_perm __qg_byte_perm
#define __syncthreads_count __qg_syncthreads_count
#define __syncthreads_and __qg_syncthreads_and
#define __syncthreads_or __qg_syncthreads_or

#ifdef warpSize
#undef warpSize
#endif
#define warpSize 4

/* PTX c operand as CUDA computes it for a 32-lane GPU: segment mask in bits
 * 12:8, clamp lane in bits 4:0 (shfl.up clamps at 0). */
#define QG_SHFL_C(width) (((32 - (width)) << 8) | 0x1f)
#define QG_SHFL_C_UP(width) ((32 - (width)) << 8)
#define QG_SHUFFLES(T)                                                                          \
    QG_INLINE T __shfl_sync(unsigned int mask, T var, int srcLane, int width = warpSize) {      \
        return (T)QG_SHFL(idx, QG_WARP_MASK(mask), (int)var, srcLane, QG_SHFL_C(width));        \
    }                                                                                           \
    QG_INLINE T __shfl_up_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) { \
        return (T)QG_SHFL(up, QG_WARP_MASK(mask), (int)var, (int)delta, QG_SHFL_C_UP(width));   \
    }                                                                                           \
    QG_INLINE T __shfl_down_sync(unsigned int mask, T var, unsigned int delta, int width = warpSize) { \
        return (T)QG_SHFL(down, QG_WARP_MASK(mask), (int)var, (int)delta, QG_SHFL_C(width));    \
    }                                                                                           \
    QG_INLINE T __shfl_xor_sync(unsigned int mask, T var, int laneMask, int width = warpSize) { \
        return (T)QG_SHFL(bfly, QG_WARP_MASK(mask), (int)var, laneMask, QG_SHFL_C(width));      \
    }
QG_SHUFFLES(int)
QG_SHUFFLES(unsigned int)
#undef QG_SHUFFLES
/* float: the value's 32 bits move unchanged (a conversion through int would not). */
#define QG_SHUFFLE_FLOAT(NAME, L)                                                                  \
    QG_INLINE float NAME(unsigned int mask, float var, L, int width = warpSize) {                  \
        return __int_as_float(NAME(mask, __float_as_int(var), lane, width));                       \
    }
QG_SHUFFLE_FLOAT(__shfl_sync, int lane)
QG_SHUFFLE_FLOAT(__shfl_up_sync, unsigned int lane)
QG_SHUFFLE_FLOAT(__shfl_down_sync, unsigned int lane)
QG_SHUFFLE_FLOAT(__shfl_xor_sync, int lane)
#undef QG_SHUFFLE_FLOAT
/* long and long long (CUDA's overloads): a 64-bit value moves as two words. */
#define QG_SHUFFLE_WIDE(NAME, T, L)                                                                \
    QG_INLINE T NAME(unsigned int mask, T var, L, int width = warpSize) {                          \
        unsigned long long v = (unsigned long long)var;                                            \
        unsigned long long lo = NAME(mask, (unsigned int)v, lane, width);                          \
        if (sizeof(T) == 4) return (T)lo;                                                          \
        return (T)(((unsigned long long)NAME(mask, (unsigned int)(v >> 32), lane, width) << 32) | lo); \
    }
#define QG_SHUFFLES_WIDE(T)                                                                        \
    QG_SHUFFLE_WIDE(__shfl_sync, T, int lane)                                                      \
    QG_SHUFFLE_WIDE(__shfl_up_sync, T, unsigned int lane)                                          \
    QG_SHUFFLE_WIDE(__shfl_down_sync, T, unsigned int lane)                                        \
    QG_SHUFFLE_WIDE(__shfl_xor_sync, T, int lane)
QG_SHUFFLES_WIDE(long)
QG_SHUFFLES_WIDE(unsigned long)
QG_SHUFFLES_WIDE(long long)
QG_SHUFFLES_WIDE(unsigned long long)
#undef QG_SHUFFLES_WIDE
#undef QG_SHUFFLE_WIDE

QG_INLINE unsigned int __ballot_sync(unsigned int mask, int predicate) {
    return QG_WARP_BITS(QG_BALLOT(QG_WARP_MASK(mask), predicate != 0));
}
QG_INLINE int __any_sync(unsigned int mask, int predicate) { return QG_ANY(QG_WARP_MASK(mask), predicate != 0); }
QG_INLINE int __all_sync(unsigned int mask, int predicate) { return QG_ALL(QG_WARP_MASK(mask), predicate != 0); }
QG_INLINE unsigned int __activemask() { return QG_WARP_BITS(QG_ACTIVEMASK()); }

/* __match_any_sync: the lanes of mask (active ones: the machine's member set)
 * whose value equals this lane's; __match_all_sync: mask when they all agree
 * (and *pred = 1), else 0 (*pred = 0). One shuffle per lane of the 4-lane warp
 * (two for 64-bit values); match.sync itself is not in the machine. */
QG_INLINE unsigned int __qg_match32(unsigned int mask, unsigned int v) {
    unsigned int same = 0;
    for (int lane = 0; lane < 4; ++lane)
        same |= (unsigned int)(__shfl_sync(mask, v, lane) == v) << lane;
    return same & mask & __activemask();
}
QG_INLINE unsigned int __qg_match64(unsigned int mask, unsigned long long v) {
    unsigned int lo = (unsigned int)v, hi = (unsigned int)(v >> 32), same = 0;
    for (int lane = 0; lane < 4; ++lane)
        same |= (unsigned int)(__shfl_sync(mask, lo, lane) == lo && __shfl_sync(mask, hi, lane) == hi) << lane;
    return same & mask & __activemask();
}
QG_INLINE unsigned int __qg_match_long(unsigned int mask, unsigned long v) {
    return sizeof(long) == 8 ? __qg_match64(mask, v) : __qg_match32(mask, (unsigned int)v);
}
QG_INLINE unsigned int __qg_match_all_of(unsigned int mask, unsigned int same, int *pred) {
    int all = same == (mask & __activemask());
    *pred = all;
    return all ? mask : 0u;
}
#define QG_MATCH(T, MATCH)                                                                        \
    QG_INLINE unsigned int __qg_match_any_sync(unsigned int mask, T value) { return MATCH(mask, value); } \
    QG_INLINE unsigned int __qg_match_all_sync(unsigned int mask, T value, int *pred) {           \
        return __qg_match_all_of(mask, MATCH(mask, value), pred);                                  \
    }
QG_MATCH(int, __qg_match32)
QG_MATCH(unsigned int, __qg_match32)
QG_MATCH(long, __qg_match_long)
QG_MATCH(unsigned long, __qg_match_long)
QG_MATCH(long long, __qg_match64)
QG_MATCH(unsigned long long, __qg_match64)
#undef QG_MATCH
#define __match_any_sync __qg_match_any_sync
#define __match_all_sync __qg_match_all_sync

/* Device printf, the way CUDA implements it: each call appends a record to a
 * buffer in global memory, and after the launch the host formats the records in
 * the order they were written (qwengpu/printf.py). Word 0 of the buffer counts
 * the words taken; a record is [1 + argument count | 64-bit argument mask << 8,
 * the format string's address, the arguments: one word each, two if 64-bit].
 * A record that does not fit is dropped (the host says so). The buffer exists
 * only in modules that call printf. On a real GPU, CUDA's own printf runs.
 * Float arguments: printf is a variadic template, so a float arrives as a float
 * (C's varargs would promote it to double: cvt.f64.f32, which the machine lacks)
 * and its 32 bits are stored; the host formats the float's exact value, which is
 * what CUDA prints of the double it promotes the float to. A double is refused. */
#ifndef QWENGPU_REAL_GPU
#define QG_PRINTF_WORDS 128
QG_INLINE unsigned int *__qg_printf_buffer() {
    static __device__ unsigned int words[QG_PRINTF_WORDS];
    return words;
}
template <typename... A> struct __qg_printf_layout {
    static constexpr unsigned int wide = 0, words = 0;
};
template <typename T, typename... R> struct __qg_printf_layout<T, R...> {
    static constexpr unsigned int wide = (sizeof(T) == 8 ? 1u : 0u) | __qg_printf_layout<R...>::wide << 1;
    static constexpr unsigned int words = (sizeof(T) == 8 ? 2u : 1u) + __qg_printf_layout<R...>::words;
};
template <typename T> struct __qg_printf_double { static constexpr bool value = false; };
template <> struct __qg_printf_double<double> { static constexpr bool value = true; };
template <> struct __qg_printf_double<long double> { static constexpr bool value = true; };
QG_INLINE unsigned int *__qg_printf_arg(unsigned int *p, float v) {
    p[0] = __float_as_uint(v);
    return p + 1;
}
template <typename T> QG_INLINE unsigned int *__qg_printf_arg(unsigned int *p, T v) {
    static_assert(!__qg_printf_double<T>::value,
                  "printf: a double argument; the machine computes in fp32 only: pass a float "
                  "(write 2.0f, not 2.0; or (float)x)");
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "printf: arguments must be integers, characters, pointers or floats");
    unsigned long long u = (unsigned long long)v;
    p[0] = (unsigned int)u;
    if (sizeof(T) == 8) p[1] = (unsigned int)(u >> 32);
    return p + (sizeof(T) == 8 ? 2 : 1);
}
template <typename... A> QG_INLINE int __qg_print_record(unsigned int kind, const char *format, A... args) {
    typedef __qg_printf_layout<A...> layout;
    static_assert(sizeof...(A) <= 24, "printf: at most 24 arguments");
    unsigned int *buffer = __qg_printf_buffer();
    unsigned int size = 2 + layout::words;
    unsigned int at = atomicAdd(&buffer[0], size);
    if (at + size < QG_PRINTF_WORDS) {
        unsigned int *p = buffer + 1 + at;
        p[0] = ((unsigned int)sizeof...(A) + 1u) | kind | layout::wide << 8;   /* never 0: a written record */
        p[1] = (unsigned int)(size_t)format;
        p += 2;
        int each[] = {0, (p = __qg_printf_arg(p, args), 0)...};
        (void)each;
    }
    return (int)sizeof...(A);
}
template <typename... A> QG_INLINE int __qg_printf(const char *format, A... args) {
    return __qg_print_record(0u, format, args...);
}
#define printf __qg_printf

/* assert: a failed assertion prints CUDA's message as a record marked 0x80 and
 * ends its thread; the host raises the failure after the launch (the machine
 * cannot stop the other threads, whose results are discarded with the error). */
QG_INLINE void __qg_assert_fail(const char *expr, const char *file, unsigned int line, const char *function) {
    __qg_print_record(0x80u, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file,
                      line, function, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
                      expr);
    asm volatile("exit;");
}
#define __qg_assert(e, text) ((e) ? (void)0 : __qg_assert_fail(text, __FILE__, __LINE__, __func__))
#else
extern "C" __device__ void __assertfail(const char *, const char *, unsigned int, const char *, size_t);
#define __qg_assert(e, text) ((e) ? (void)0 : __assertfail(text, __FILE__, __LINE__, __func__, 1))
#endif

/* assert (see __qg_assert above: `text` is the expression as the user wrote it, stringified
 * by assert itself before threadIdx & co. expand), by NDEBUG as the standard says; the header
 * has no include guard, so each later #include <cassert> re-applies the rule. */
#include <assert.h>

#endif /* QWENGPU_PRELUDE_H */
