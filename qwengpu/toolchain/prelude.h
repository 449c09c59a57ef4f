/* qwengpu CUDA prelude: prepended by qwengpu.toolchain.frontend.compile_cuda
 * to every source, so kernels need no #include.
 *
 * The machine has 4-lane warps: warpSize is 4, and the shuffle width defaults
 * to 4. Shuffles pass PTX's c operand exactly as CUDA computes it for a
 * 32-lane GPU, so __shfl_*_sync(..., width) means the same here as on real
 * hardware (see isa.shfl_source_lane).
 *
 * Three builds of this file:
 *   clang-19 (-nocudainc): everything is defined here from clang's NVVM builtins.
 *   NVRTC (__CUDACC_RTC__): NVRTC predefines the qualifiers, index variables,
 *     atomics and intrinsics; warpSize, the shuffles/votes and the few
 *     intrinsics whose PTX the machine lacks are redirected here (macros).
 *   QWENGPU_REAL_GPU (set by the cuda engine on top of NVRTC): warp masks
 *     and vote results are mapped onto the thread's 4-lane group of the real
 *     32-lane warp, so a kernel sees the same 4-lane warps there.
 * Every helper is static and always inlined so none of it appears in the PTX.
 */
#ifndef QWENGPU_PRELUDE_H
#define QWENGPU_PRELUDE_H

#define QWENGPU 1
#define QG_INLINE static __inline__ __attribute__((device, always_inline))

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

struct uint3 { unsigned int x, y, z; };
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

/* Synchronisation. __syncthreads is a clang builtin already. */
QG_INLINE void __syncwarp(unsigned int mask = 0xffffffffu) { __nvvm_bar_warp_sync(mask); }
QG_INLINE void __threadfence() { __nvvm_membar_gl(); }
QG_INLINE void __threadfence_block() { __nvvm_membar_cta(); }

/* Integer intrinsics, written so they lower to plain ISA ops. */
QG_INLINE int min(int a, int b) { return a < b ? a : b; }
QG_INLINE unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
QG_INLINE unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
QG_INLINE unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
QG_INLINE int max(int a, int b) { return a > b ? a : b; }
QG_INLINE unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
QG_INLINE unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
QG_INLINE unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
QG_INLINE unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
QG_INLINE unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
QG_INLINE int abs(int a) { return (int)(a < 0 ? 0u - (unsigned int)a : (unsigned int)a); }  /* abs(INT_MIN) == INT_MIN */
QG_INLINE int __popc(unsigned int x) { return __builtin_popcount(x); }
QG_INLINE int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
QG_INLINE unsigned int __brev(unsigned int x) { return __builtin_bitreverse32(x); }
QG_INLINE int __mulhi(int a, int b) { return __nvvm_mulhi_i(a, b); }
QG_INLINE unsigned int __umulhi(unsigned int a, unsigned int b) { return __nvvm_mulhi_ui(a, b); }

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
#endif

/* ------------------------------------------------------------------ common */
/* PTX has mul24, sad and bfind, the machine does not: spell these in plain
 * integer ops (also under NVRTC, whose own versions emit them). */
/* __mul24: low 32 bits of the product of the low 24 bits (sign-extended). */
QG_INLINE int __qg_mul24(int a, int b) { return ((int)((unsigned)a << 8) >> 8) * ((int)((unsigned)b << 8) >> 8); }
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
#define __ffs __qg_ffs
#define __mul24 __qg_mul24
#define __umul24 __qg_umul24
#define __sad __qg_sad
#define __usad __qg_usad

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

QG_INLINE unsigned int __ballot_sync(unsigned int mask, int predicate) {
    return QG_WARP_BITS(QG_BALLOT(QG_WARP_MASK(mask), predicate != 0));
}
QG_INLINE int __any_sync(unsigned int mask, int predicate) { return QG_ANY(QG_WARP_MASK(mask), predicate != 0); }
QG_INLINE int __all_sync(unsigned int mask, int predicate) { return QG_ALL(QG_WARP_MASK(mask), predicate != 0); }
QG_INLINE unsigned int __activemask() { return QG_WARP_BITS(QG_ACTIVEMASK()); }

#endif /* QWENGPU_PRELUDE_H */
