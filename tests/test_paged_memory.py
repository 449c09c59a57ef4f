"""Global, shared and CONST memory above their lane words (isa.LANE_WORDS, docs/machine.md step 28):
one copy in the model, read lane by lane (LD tokens). Kernels that load, store and update words
there, alone and mixed with lane words in one instruction, run exactly on the interpreter and,
with replay, on the model. Expected values are computed here in Python."""
import numpy as np
import pytest

from qwengpu import Device, isa
from qwengpu.errors import ExecutionError, MachineLimitError

LOW = isa.LANE_GLOBAL_WORDS

# one load whose lanes mix a lane word (pad, below LOW) and paged words (a, above it)
MIXED = r"""extern "C" __global__ void k(const int *pad, const int *a, const int *idx, int *out) {
    int t = threadIdx.x;
    const int *p = (t & 1) ? &a[idx[t]] : &pad[t];
    out[t] = *p + 1;
}"""

# every lane loads the same paged word; each stores to a paged word, then reads a neighbour's
# after a barrier; an atomic on a paged word
SHARED_WORD = r"""extern "C" __global__ void k(const int *pad, int *a, int *out) {
    int t = threadIdx.x;
    int x = a[7];
    a[100 + t] = x * (t + 1);
    __syncthreads();
    out[t] = a[100 + (t + 1) % blockDim.x] - t;
    atomicAdd(&a[3], t + 1);
}"""

# the last word of global memory, and one past it
EDGE = r"""extern "C" __global__ void k(int *all, int off) {
    int t = threadIdx.x;
    all[off - t] = all[off - 8 - t] + t;
}"""


# shared memory's last words: a store and a mixed load per thread, and an atomic on a paged word
SHARED_TOP = r"""extern "C" __global__ void k(const int *a, int *out) {
    __shared__ int buf[2048];
    int t = threadIdx.x;
    buf[t] = a[t];
    buf[2047 - 200 * t] = a[t] * 10;
    if (t == 0) buf[1500] = 0;
    __syncthreads();
    atomicAdd(&buf[1500], a[t]);
    __syncthreads();
    out[t] = buf[(t & 1) ? 2047 - 200 * (blockDim.x - 1 - t) : t] + buf[1500];
}"""


# a word in each quarter of shared memory's paged words (each in heads of its own), stored and
# read back by another lane after a barrier: the compiler cannot forward the store
SHARED_PAGES = r"""extern "C" __global__ void k(const int *a, int *out) {
    __shared__ int buf[2048];
    int t = threadIdx.x;
    for (int q = 0; q < 4; q++) buf[256 + 448 * q + t] = a[t] * (q + 2);
    __syncthreads();
    int u = (t + 1) % blockDim.x, sum = 0;
    for (int q = 0; q < 4; q++) sum = sum * 10 + buf[256 + 448 * q + u];
    out[t] = sum;
}"""

# a __constant__ table of 2000 words: a load whose lanes mix CONST's lane words and paged ones
TABLE = [(7 * i * i + 3) % 100_003 - 50_000 for i in range(2000)]
CONST_TABLE = ("__constant__ int table[2000] = {" + ", ".join(map(str, TABLE)) + "};\n"
               + r"""extern "C" __global__ void k(const int *idx, int *out) {
    int t = threadIdx.x;
    out[t] = table[idx[t]] + table[1999 - t];
}""")


def pad_words() -> np.ndarray:
    """Lane words 0..LOW - 1 (values: their index, so a mixed load tells the halves apart)."""
    return np.arange(LOW, dtype=np.int32) * 3


def check_mixed(dev: Device, n: int) -> None:
    a = np.arange(500, dtype=np.int32) * 7 - 1000
    idx = np.array([0, 3, 0, 499, 0, 250, 0, 4], np.int32)[:n]
    out = np.zeros(n, np.int32)
    dev.compile(MIXED).get_function("k")(grid=1, block=n, args=[pad_words(), a, idx, out])
    want = [(int(a[idx[t]]) if t & 1 else 3 * t) + 1 for t in range(n)]
    assert out.tolist() == want


def check_shared_word(dev: Device, n: int) -> None:
    a = np.zeros(200, np.int32)
    a[7], a[3] = 11, 1000
    out = np.zeros(n, np.int32)
    dev.compile(SHARED_WORD).get_function("k")(grid=1, block=n, args=[pad_words(), a, out])
    assert out.tolist() == [11 * ((t + 1) % n + 1) - t for t in range(n)]
    assert a[3] == 1000 + n * (n + 1) // 2
    assert a[100:100 + n].tolist() == [11 * (t + 1) for t in range(n)]


def check_edge(dev: Device, n: int) -> None:
    all_ = np.zeros(isa.GLOBAL_WORDS, np.int32)
    all_[-16:] = np.arange(16) + 50
    want = all_.copy()
    top = isa.GLOBAL_WORDS - 1
    for t in range(n):
        want[top - t] = want[top - 8 - t] + t
    dev.compile(EDGE).get_function("k")(grid=1, block=n, args=[all_, top])
    assert all_.tolist() == want.tolist()
    with pytest.raises(ExecutionError, match=r"store at global byte address 0x10000 is past the end \(65536 bytes\)"):
        dev.compile(EDGE).get_function("k")(grid=1, block=1, args=[np.zeros(isa.GLOBAL_WORDS, np.int32), top + 1])


def check_shared_top(dev: Device, n: int) -> None:
    a = np.array([5, -7, 1000, 3, 8, 9, 10, 11], np.int32)[:n]
    out = np.zeros(n, np.int32)
    dev.compile(SHARED_TOP).get_function("k")(grid=1, block=n, args=[a, out])
    total = int(a.sum())
    assert out.tolist() == [(10 * int(a[n - 1 - t]) if t & 1 else int(a[t])) + total for t in range(n)]


def check_const_table(dev: Device, n: int) -> None:
    idx = np.array([5, 1900, 127, 128, 1000, 0, 1999, 64], np.int32)[:n]
    out = np.zeros(n, np.int32)
    fn = dev.compile(CONST_TABLE).get_function("k")
    fn(grid=1, block=n, args=[idx, out])
    assert len(fn.program.const_init) > isa.LANE_CONST_WORDS
    assert out.tolist() == [TABLE[i] + TABLE[1999 - t] for t, i in enumerate(idx.tolist())]


def check_shared_pages(dev: Device, n: int) -> None:
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8], np.int32)[:n]
    out = np.zeros(n, np.int32)
    dev.compile(SHARED_PAGES).get_function("k")(grid=1, block=n, args=[a, out])
    want = []
    for t in range(n):
        x, total = int(a[(t + 1) % n]), 0
        for q in range(4):
            total = total * 10 + x * (q + 2)
        want.append(total)
    assert out.tolist() == want


CHECKS = [check_mixed, check_shared_word, check_edge, check_shared_top, check_shared_pages, check_const_table]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_paged_memory_on_the_interpreter(check):
    check(Device(), 8)


@pytest.fixture(scope="module")
def model():
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    return Device("model", check="replay")


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_paged_memory_on_the_model(model, check):
    check(model, 4)


def test_one_word_past_shared_memory_is_refused():
    src = r"""extern "C" __global__ void k(int *out) {
        __shared__ int buf[2049];
        buf[threadIdx.x] = threadIdx.x;
        __syncthreads();
        out[threadIdx.x] = buf[2048 - threadIdx.x];
    }"""
    with pytest.raises(MachineLimitError, match="needs 2049 words of shared memory; the limit is 2048"):
        Device().compile(src).get_function("k")
