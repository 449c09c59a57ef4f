"""isa.Program.writes: which global memory a kernel may write (toolchain/writes.py).

The expectations come from the CUDA sources: which arrays the code stores to or updates
atomically, and whether it writes a __device__ variable or calls printf. A conservative
("everything") answer is expected where the source makes an address the analysis is
told not to follow: a pointer reloaded from memory, an index loaded from memory, an
integer used as an address. Every case is also run on the interpreter, and each array
(and the __device__ region) whose words changed must be among the writes: the analysis
may over-approximate, never miss. The sweeps do the same for every suite kernel and for
the differential tester's random programs."""
import numpy as np
import pytest

from qwengpu import Device, interp, isa
from qwengpu.testing import difftest
from qwengpu.launch import Launch
from qwengpu.suite import discover, load_spec
from test_generic_addressing import CONST_OR_GLOBAL, LEVELS      # its kernels, at its levels


def program(src, fe="clang", opt=2, name="k"):
    return Device("interp", frontend=fe, opt=opt).compile(src).get_function(name).program


def run_checked(prog, grid, block, args):
    """Run on the interpreter; assert every changed array and static word is a declared write.
    Returns the argument indices whose arrays changed, and the declared writes among the
    arguments that are arrays (`params` may also name a parameter the analysis can't tell
    from a pointer, Param.pointer None, that this launch passes an integer)."""
    launch = Launch.build(prog, grid, block, list(args))
    before = launch.memory.copy()
    interp.run(prog, launch.grid, launch.block, launch.params, launch.memory)
    w = prog.writes
    assert w is not None
    changed = set()
    for slot in launch.arrays:
        if not np.array_equal(before[slot.words], launch.memory[slot.words]):
            aliases = {k for k, p in enumerate(prog.params) if isinstance(args[k], np.ndarray)
                       and launch.params[p.word] == 4 * slot.word}
            assert aliases & w.params, f"argument {slot.index} was written but writes = {w}"
            changed.add(slot.index)
    static = slice(0, prog.static_global_words)
    if not np.array_equal(before[static], launch.memory[static]):
        assert w.static, f"the __device__ region was written but writes = {w}"
    return changed, isa.Writes(frozenset(i for i in w.params if isinstance(args[i], np.ndarray)), w.static)


def everything(prog):
    arrays = frozenset(i for i, p in enumerate(prog.params) if p.pointer is not False)
    return isa.Writes(arrays, prog.static_global_words > 0)


def test_a_hand_built_program_has_unknown_writes():
    p = isa.Program("k", [isa.MachineBlock([], isa.Terminator(isa.Term.EXIT))], [])
    assert p.writes is None


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_dot_writes_only_out(fe, opt):
    src = open(discover(pattern="dot")[0].source).read()
    prog = program(src, fe, opt, "dot")
    a, b, out = np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), np.zeros(1, np.int32)
    assert run_checked(prog, 1, 4, [a, b, out, 3]) == ({2}, isa.Writes(frozenset({2}), False))      # a, b read; out written


TWO_OF_THREE = r"""
extern "C" __global__ void k(const int *a, int *b, int *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        b[i] = a[i] + 1;
        c[2 * i + 1] = a[n - 1 - i] << 3;
    }
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_a_kernel_writing_two_of_three_arrays(fe, opt):
    prog = program(TWO_OF_THREE, fe, opt)
    a = np.arange(8, dtype=np.int32)
    assert run_checked(prog, 2, 4, [a, np.zeros(8, np.int32), np.zeros(16, np.int32), 8]) == ({1, 2}, isa.Writes(frozenset({1, 2}), False))


FLOAT_MATH = r"""
extern "C" __global__ void k(const float *a, const float *b, float *out) {
    int i = threadIdx.x;
    out[i] = fmaf(a[i], b[i], sqrtf(a[i])) + copysignf(rsqrtf(b[i]), a[i]) + exp2f(a[i]) / b[i];
}"""


@pytest.mark.parametrize("fe", ["clang", "nvrtc"])
def test_float_math_writes_only_its_output(fe):
    """fma, sqrt, rsqrt, ex2 and copysign are values like add's: their kernel writes out alone."""
    prog = program(FLOAT_MATH, fe)
    a, b = np.array([1.5, 4, 9, 0.25], np.float32), np.array([2, -3, 0.5, 8], np.float32)
    assert run_checked(prog, 1, 4, [a, b, np.zeros(4, np.float32)]) == ({2}, isa.Writes(frozenset({2}), False))


SELECTED = r"""
extern "C" __global__ void k(const int *src, int *even, int *odd, unsigned which) {
    unsigned t = threadIdx.x;
    int *dst = ((which >> t) & 1u) ? odd : even;
    dst[t] = src[t] * 3;
}"""

SELECTED_BY_DATA = r"""
extern "C" __global__ void k(const int *src, int *neg, int *pos) {
    unsigned t = threadIdx.x;
    int v = src[t];
    int *dst = v < 0 ? neg : pos;
    dst[t] = v;
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_a_pointer_selected_by_a_condition_writes_both_candidates(fe, opt):
    prog = program(SELECTED, fe, opt)
    src = np.arange(4, dtype=np.int32)
    assert run_checked(prog, 1, 4, [src, np.zeros(4, np.int32), np.zeros(4, np.int32), 0b0110]) == ({1, 2}, isa.Writes(frozenset({1, 2}), False))
    # the condition depends on loaded data, the pointers do not: src stays read-only
    prog = program(SELECTED_BY_DATA, fe, opt)
    src = np.array([-1, 2, -3, 4], np.int32)
    assert run_checked(prog, 1, 4, [src, np.zeros(4, np.int32), np.zeros(4, np.int32)]) == ({1, 2}, isa.Writes(frozenset({1, 2}), False))


POINTER_THROUGH_SHARED = r"""
extern "C" __global__ void k(const int *src, int *out, const int *other) {
    __shared__ int *where;
    if (threadIdx.x == 0)
        where = out + 4;
    __syncthreads();
    where[threadIdx.x] = src[threadIdx.x];
    out[threadIdx.x] = other[threadIdx.x];
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_a_pointer_stored_to_shared_memory_and_reloaded_may_write_anything(fe, opt):
    prog = program(POINTER_THROUGH_SHARED, fe, opt)
    assert prog.writes == everything(prog)      # src and other too: the reloaded pointer may be anything
    assert prog.writes.params == {0, 1, 2}
    src = np.arange(4, dtype=np.int32)
    assert run_checked(prog, 1, 4, [src, np.zeros(8, np.int32), src + 10])[0] == {1}


POINTER_FROM_MEMORY = r"""
__device__ int g;
extern "C" __global__ void k(const unsigned *where, int *a, int *b) {
    int *p = (int *)(size_t)where[threadIdx.x];     // an address the host put in an array
    *p = 7;
}"""

INTEGER_AS_ADDRESS = r"""
__device__ int g;
extern "C" __global__ void k(int *a, const int *b) {
    *(int *)(size_t)(4 * threadIdx.x + 4) = b[threadIdx.x];    // global words 1, 2
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_an_address_loaded_or_computed_from_integers_may_write_anything(fe, opt):
    prog = program(POINTER_FROM_MEMORY, fe, opt)
    assert prog.writes == everything(prog) and prog.writes.static
    assert prog.writes.params >= {1, 2}
    # the layout: __device__ words (g), then where (2 words), a (2), b (2); thread t writes a[t] or b[t]
    s = prog.static_global_words
    where = np.array([4 * (s + 2), 4 * (s + 5)], np.uint32)
    assert run_checked(prog, 1, 2, [where, np.zeros(2, np.int32), np.zeros(2, np.int32)])[0] == {1, 2}
    prog = program(INTEGER_AS_ADDRESS, fe, opt)
    assert prog.writes == everything(prog) and prog.writes.static and 0 in prog.writes.params
    run_checked(prog, 1, 2, [np.zeros(2, np.int32), np.array([3, 4], np.int32)])


DEVICE_COUNTER = r"""
__device__ unsigned counter;
__device__ const int table[4] = {5, 6, 7, 8};
extern "C" __global__ void k(const int *in, int *out) {
    unsigned t = threadIdx.x;
    out[t] = in[t] + table[t & 3];
    atomicAdd(&counter, 1u);
}"""

DEVICE_TABLE_READ = r"""
__device__ int table[4] = {5, 6, 7, 8};
extern "C" __global__ void k(const int *in, int *out) {
    unsigned t = threadIdx.x;
    out[t] = in[t] * table[t & 3];
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_a_device_variable_counter_writes_the_static_region(fe, opt):
    prog = program(DEVICE_COUNTER, fe, opt)
    assert prog.static_global_words > 0
    assert run_checked(prog, 1, 4, [np.arange(4, dtype=np.int32), np.zeros(4, np.int32)]) == ({1}, isa.Writes(frozenset({1}), True))
    # a __device__ table that is only read leaves the region unwritten
    prog = program(DEVICE_TABLE_READ, fe, opt)
    assert prog.static_global_words > 0
    assert run_checked(prog, 1, 4, [np.arange(4, dtype=np.int32), np.zeros(4, np.int32)]) == ({1}, isa.Writes(frozenset({1}), False))


PRINTF = r"""
#include <cstdio>
extern "C" __global__ void k(const int *in, int *out) {
    out[threadIdx.x] = in[threadIdx.x] + 1;
    printf("thread %d of %d\n", threadIdx.x, blockDim.x);
}"""

PRINTF_DATA = r"""
#include <cstdio>
extern "C" __global__ void k(const int *in) {
    printf("%d: %d\n", threadIdx.x, in[threadIdx.x]);
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_printf_writes_the_static_region(fe, opt):
    prog = program(PRINTF, fe, opt)
    assert prog.printf_buffer is not None and prog.printf_buffer < prog.static_global_words
    assert run_checked(prog, 1, 4, [np.arange(4, dtype=np.int32), np.zeros(4, np.int32)]) == ({1}, isa.Writes(frozenset({1}), True))
    # a loaded argument goes into the buffer, where printf also reads back its word count:
    # a value loaded from memory may be a pointer, so the record's address may be anything
    prog = program(PRINTF_DATA, fe, opt)
    assert prog.writes == everything(prog) and prog.writes.static
    run_checked(prog, 1, 4, [np.arange(4, dtype=np.int32)])


POINTER_IN_DEVICE_VARIABLE = r"""
__device__ int *slot;
extern "C" __global__ void k(const int *in, int *out, const int *other) {
    if (threadIdx.x == 0)
        slot = out + 4;
    __syncthreads();
    slot[threadIdx.x] = in[threadIdx.x];      // through a pointer the kernel put in the region
    out[threadIdx.x] = other[threadIdx.x];
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_a_pointer_kept_in_a_device_variable(fe, opt):
    """The __device__ region holds only what the kernel stores there (the launch puts the
    arrays elsewhere), so a pointer reloaded from it is the one stored."""
    prog = program(POINTER_IN_DEVICE_VARIABLE, fe, opt)
    args = [np.arange(4, dtype=np.int32), np.zeros(8, np.int32), np.arange(4, dtype=np.int32) + 10]
    assert run_checked(prog, 1, 4, args) == ({1}, isa.Writes(frozenset({1}), True))


ATOMICS = r"""
extern "C" __global__ void k(const int *in, int *sums, unsigned *bits, int *old) {
    unsigned t = threadIdx.x;
    atomicAdd(&sums[t & 1], in[t]);
    atomicOr(&bits[0], 1u << t);
    old[t] = atomicMax(&sums[2], in[t]);
}"""

SCATTER = r"""
extern "C" __global__ void k(const int *in, int *hist) {
    atomicAdd(&hist[in[threadIdx.x] & 3], 1);
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_atomics_write_their_arrays(fe, opt):
    prog = program(ATOMICS, fe, opt)
    args = [np.arange(1, 5, dtype=np.int32), np.zeros(3, np.int32), np.zeros(1, np.uint32), np.zeros(4, np.int32)]
    assert run_checked(prog, 1, 4, args) == ({1, 2, 3}, isa.Writes(frozenset({1, 2, 3}), False))
    # an index loaded from memory: the address may be anything (a loaded value may be a pointer)
    prog = program(SCATTER, fe, opt)
    assert prog.writes == everything(prog)
    assert run_checked(prog, 1, 4, [np.array([0, 1, 1, 3], np.int32), np.zeros(4, np.int32)])[0] == {1}


POINTER_ARITHMETIC = r"""
extern "C" __global__ void k(const unsigned *in, unsigned *out, unsigned *spare, int n) {
    unsigned t = threadIdx.x;
    unsigned *row = out + (t >> 1) * 4 + (n - 2);              // add, shift, sub
    unsigned *aligned = (unsigned *)(((size_t)row + 3) & ~(size_t)3);   // and / round up
    aligned[t & 1] = in[t];
    unsigned *end = out + n;
    *(end - 1 - t) ^= 1u;                                       // a read-modify-write
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_pointer_arithmetic_keeps_its_array(fe, opt):
    prog = program(POINTER_ARITHMETIC, fe, opt)
    args = [np.arange(4, dtype=np.uint32), np.zeros(16, np.uint32), np.zeros(4, np.uint32), 12]   # out[8..15]
    assert run_checked(prog, 1, 4, args) == ({1}, isa.Writes(frozenset({1}), False))


POINTER_TRICKS = r"""
extern "C" __global__ void k(const int *a, int *b, int *c, const int *d) {
    unsigned t = threadIdx.x;
    int *via_a = (int *)a + (b - a);                  // b, as a plus the pointers' difference
    via_a[t] = d[t];
    unsigned long long v = (unsigned long long)c;     // c in two 32-bit halves, put back together
    unsigned lo = (unsigned)v, hi = (unsigned)(v >> 32);
    int *joined = (int *)(((unsigned long long)hi << 32) | lo);
    joined[t] = 2 * d[t];
}"""

SHUFFLED_POINTER = r"""
extern "C" __global__ void k(const int *in, int *out, int *other) {
    unsigned t = threadIdx.x;
    long long mine = (long long)(t == 0 ? out : other);
    int *p = (int *)__shfl_sync(0xfu, mine, 0);               // lane 0's pointer: out
    p[t] = in[t];
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_pointer_tricks_keep_their_arrays(fe, opt):
    prog = program(POINTER_TRICKS, fe, opt)
    args = [np.arange(4, dtype=np.int32), np.zeros(4, np.int32), np.zeros(4, np.int32), np.arange(4, dtype=np.int32)]
    changed, declared = run_checked(prog, 1, 4, args)
    assert changed == {1, 2} and declared.params >= {1, 2} and 3 not in declared.params
    prog = program(SHUFFLED_POINTER, fe, opt)
    assert run_checked(prog, 1, 4, [np.arange(4, dtype=np.int32), np.zeros(4, np.int32), np.zeros(4, np.int32)]) \
        == ({1}, isa.Writes(frozenset({1, 2}), False))


SHARED_OR_GLOBAL = r"""
extern "C" __global__ void k(unsigned *g, unsigned *out, const unsigned *ro, unsigned pick) {
    __shared__ unsigned s[8];
    unsigned t = threadIdx.x;
    s[t] = ro[t];
    __syncthreads();
    unsigned *p = ((pick >> t) & 1u) ? &s[(t + 1) & 7] : &g[t];
    unsigned before = atomicAdd(p, t + 1);
    *p += 1000;
    __syncthreads();
    out[t] = before + s[t];
}"""

@pytest.mark.parametrize("fe,opt", LEVELS)
def test_generic_pointers_to_shared_or_global(fe, opt):
    prog = program(SHARED_OR_GLOBAL, fe, opt)
    args = [np.arange(8, dtype=np.uint32), np.zeros(8, np.uint32), np.arange(8, dtype=np.uint32), 0b10110010]
    assert run_checked(prog, 1, 8, args) == ({0, 1}, isa.Writes(frozenset({0, 1}), False))       # ro only read
    prog = program(CONST_OR_GLOBAL, fe, opt)
    assert run_checked(prog, 1, 8, [np.arange(8, dtype=np.uint32), np.zeros(8, np.uint32), 8]) == ({1}, isa.Writes(frozenset({1}), False))


NOINLINE_HELPER = r"""
__device__ __noinline__ void put(int *p, int i, int v) { p[i] = v; }
extern "C" __global__ void k(const int *in, int *out, int *also) {
    unsigned t = threadIdx.x;
    put(out, t, in[t]);
    put(t & 1 ? also : out, t + 4, 1);
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_pointers_passed_to_a_called_function(fe, opt):
    prog = program(NOINLINE_HELPER, fe, opt)
    args = [np.arange(4, dtype=np.int32), np.zeros(8, np.int32), np.zeros(8, np.int32)]
    assert run_checked(prog, 1, 4, args) == ({1, 2}, isa.Writes(frozenset({1, 2}), False))


def test_the_same_array_passed_twice_is_written_through_either_parameter():
    prog = program(TWO_OF_THREE)
    shared = np.zeros(8, np.int32)
    assert run_checked(prog, 1, 4, [np.arange(8, dtype=np.int32), shared, shared, 4])[0] == {1}


# ---------------------------------------------------------------------------
# Soundness sweeps
# ---------------------------------------------------------------------------
SUITE = discover()


@pytest.mark.parametrize("case", SUITE, ids=[c.name for c in SUITE])
def test_suite_kernel_writes_cover_what_it_wrote(case):
    spec = load_spec(case)
    grid, block, args = spec.launch()
    prog = program(case.source.read_text(), name=spec.KERNEL)
    w = prog.writes
    assert w is not None and w.params <= {i for i, p in enumerate(prog.params) if p.pointer is not False}
    run_checked(prog, grid, block, args)
    # a kernel with a global store or atomic in its machine program declares some write
    if any(ins.op in (isa.Op.ST, isa.Op.ATOM) and (ins.mod if ins.op is isa.Op.ST else ins.mod[0])
           is isa.Space.GLOBAL for b in prog.blocks for ins in b.instrs):
        assert w.params or w.static


def test_the_suite_keeps_its_read_only_inputs_read_only():
    """Precision, from the sources: kernels whose addresses don't depend on loaded data."""
    want = {"dot": {2}, "vec_add": {2}, "matmul_naive": {2}, "matmul_tiled": {2}, "conv1d_shared": {2},
            "transpose_shared": {1}, "bit_ops": {0, 1, 2}, "histogram_shared": {1}, "saxpy_int": {3}}
    for case in discover():
        if case.name in want:
            spec = load_spec(case)
            prog = program(case.source.read_text(), name=spec.KERNEL)
            arrays = {i for i, a in enumerate(spec.launch()[2]) if isinstance(a, np.ndarray)}
            assert prog.writes.params & arrays == want[case.name], case.name


@pytest.mark.parametrize("start", range(1, 121, 30))
def test_random_programs_write_out_and_never_in(start):
    """difftest's kernels k(const unsigned *in, unsigned *out, ...) load `in` with computed
    indices and store only to `out`."""
    for seed in range(start, start + 30):
        p = difftest.generate(seed)
        prog = program(p.source, p.frontend, p.opt)
        changed, declared = run_checked(prog, p.grid, p.block, [p.inputs.copy(), p.out_init.copy(), *p.args])
        assert declared == isa.Writes(frozenset({1}), False), seed
        assert changed <= {1}
