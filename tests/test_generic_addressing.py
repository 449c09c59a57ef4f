"""Generic pointers whose state space only the run time knows (windowed mode, toolchain/spaces.py):
a pointer that is either a __constant__ table or a global array, or either shared or global
memory, read, written and updated atomically. Expected values are computed here in Python."""
import numpy as np
import pytest

from qwengpu import Device
from qwengpu.errors import MemoryFault

LEVELS = [("clang", 1), ("clang", 2), ("clang", 3), ("nvrtc", 3)]


def run(src, fe, opt, block, args):
    Device(engine="interp", frontend=fe, opt=opt).compile(src).get_function("k")(grid=1, block=block, args=args)


CONST_OR_GLOBAL = r"""
__constant__ unsigned ct[4] = {10, 20, 30, 40};
extern "C" __global__ void k(const unsigned *in, unsigned *out, unsigned n) {
    unsigned i = threadIdx.x, x = in[i];
    out[i] = (x & 1u) ? ct[x & 3u] : in[(i + 1) % n];
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_constant_or_global_read_through_one_pointer(fe, opt):
    x = np.array([1, 2, 3, 6, 7, 8, 9, 12], np.uint32)
    out = np.zeros(8, np.uint32)
    run(CONST_OR_GLOBAL, fe, opt, 8, [x, out, 8])
    ct = [10, 20, 30, 40]
    assert out.tolist() == [ct[v & 3] if v & 1 else int(x[(i + 1) % 8]) for i, v in enumerate(x)]


SHARED_OR_GLOBAL = r"""
extern "C" __global__ void k(unsigned *g, unsigned *out, unsigned pick) {
    __shared__ unsigned s[8];
    unsigned t = threadIdx.x;
    s[t] = 100 + t;
    __syncthreads();
    unsigned *p = ((pick >> t) & 1u) ? &s[(t + 1) & 7] : &g[t];
    unsigned before = atomicAdd(p, t + 1);
    *p += 1000;
    __syncthreads();
    out[t] = before;
    out[8 + t] = s[t];
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_shared_or_global_written_and_updated_through_one_pointer(fe, opt):
    pick = 0b10110010
    g = np.arange(8, dtype=np.uint32) * 7
    out = np.zeros(16, np.uint32)
    run(SHARED_OR_GLOBAL, fe, opt, 8, [g, out, pick])
    s, g_want, before = [100 + t for t in range(8)], [7 * t for t in range(8)], []
    # lanes run in order t = 0..7 for each instruction; the targets are distinct words
    for t in range(8):
        mem, i = (s, (t + 1) & 7) if (pick >> t) & 1 else (g_want, t)
        before.append(mem[i])
        mem[i] += t + 1 + 1000
    assert out.tolist() == before + s
    assert g.tolist() == g_want


def test_generic_address_outside_every_window_faults():
    src = r"""__constant__ unsigned ct[2] = {1, 2};
    extern "C" __global__ void k(unsigned *in, unsigned *out) {
        unsigned i = threadIdx.x;
        const unsigned *p = (in[i] & 1u) ? &ct[in[i] >> 1] : &in[in[i] >> 1];
        out[i] = *p;
    }"""
    fn = Device(engine="interp").compile(src).get_function("k")
    with pytest.raises(MemoryFault):
        fn(grid=1, block=1, args=[np.array([2 * 50000], np.uint32), np.zeros(1, np.uint32)])   # byte 200000: window 3


SELECTED = r"""
extern "C" __global__ void k(unsigned *g, unsigned *out) {
    __shared__ unsigned s[4];
    unsigned t = threadIdx.x;
    s[t] = 50 + t;
    __syncthreads();
    unsigned *p = (t & 1u) ? s + t : g + t;
    out[t] = *p;
}"""


@pytest.mark.parametrize("fe,opt", LEVELS)
def test_selected_between_shared_and_global(fe, opt):
    g = np.array([9, 8, 7, 6], np.uint32)
    out = np.zeros(4, np.uint32)
    run(SELECTED, fe, opt, 4, [g, out])
    assert out.tolist() == [9, 51, 7, 53]
