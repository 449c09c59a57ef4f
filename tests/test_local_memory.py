"""Local memory (.local: a frame per thread in shared memory, docs/lowering.md "Local memory"):
what CUDA compiles into it runs on the interpreter with both front ends, and on the model.
Expected values are computed here in Python from C's rules."""
import numpy as np
import pytest

from qwengpu import Device, isa
from qwengpu.errors import MachineLimitError

FRONTS = ["clang", "nvrtc"]

DIVMOD = r"""__device__ __noinline__ void divmod(int a, int b, int *q, int *r) { *q = a / b; *r = a % b; }
__device__ __noinline__ void twice(int &x) { x *= 2; }
extern "C" __global__ void k(const int *a, const int *b, int *out) {
    int i = threadIdx.x, q, r;
    divmod(a[i], b[i], &q, &r);
    twice(r);
    out[2 * i] = q; out[2 * i + 1] = r;
}"""

LOCAL_ARRAY = r"""extern "C" __global__ void k(const int *a, int *out) {
    int buf[8];
    int i = threadIdx.x, x = a[i];
    for (int j = 0; j < 8; j++) buf[j] = x * j + i;
    out[i] = buf[x & 7] - buf[(x >> 3) & 7];
}"""

BY_VALUE = r"""struct Pair { int x, y; };
__device__ __noinline__ int weigh(Pair p) { return 3 * p.x + p.y; }
__device__ __noinline__ int diff(int2 v) { return v.x - v.y; }
extern "C" __global__ void k(const int *a, int *out) {
    int i = threadIdx.x;
    Pair p = {a[i], i};
    out[i] = weigh(p) + diff(make_int2(a[i], 5));
}"""

# a pointer that is a local variable's on some threads and a global array's on others: its
# space is known only at run time (the lowering's windowed mode)
EITHER = r"""extern "C" __global__ void k(int *g, const int *a) {
    int i = threadIdx.x, mine = 100;
    int *p = (a[i] & 1) ? &mine : &g[i];
    *p += a[i];
    g[i + blockDim.x] = mine;
}"""

A = np.array([3, -17, 100, 44, 5, 6, 7, 80], np.int32)
B = np.array([7, 7, -9, 5, 2, 3, 1, 6], np.int32)


def c_div(a: int, b: int) -> tuple[int, int]:
    """C's / and %: the quotient truncated toward zero, the remainder with a's sign."""
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q, a - q * b


def run(dev: Device, src: str, args: list, threads: int):
    fn = dev.compile(src).get_function("k")
    fn(grid=1, block=threads, args=args)
    return fn.program


def check_divmod(dev: Device, n: int) -> None:
    out = np.zeros(2 * n, np.int32)
    run(dev, DIVMOD, [A, B, out], n)
    want = [v for a, b in zip(A[:n].tolist(), B.tolist()) for q, r in [c_div(a, b)] for v in (q, 2 * r)]
    assert out.tolist() == want


def check_local_array(dev: Device, n: int) -> None:
    out = np.zeros(n, np.int32)
    prog = run(dev, LOCAL_ARRAY, [A, out], n)
    assert prog.shared_words == isa.MACHINE_BLOCK_THREADS * 8       # 16 frames of 8 words
    buf = lambda x, i, j: x * j + i                                 # noqa: E731
    assert out.tolist() == [buf(x, i, x & 7) - buf(x, i, (x >> 3) & 7) for i, x in enumerate(A[:n].tolist())]


def check_by_value(dev: Device, n: int) -> None:
    out = np.zeros(n, np.int32)
    run(dev, BY_VALUE, [A, out], n)
    assert out.tolist() == [3 * a + i + a - 5 for i, a in enumerate(A[:n].tolist())]


def check_either(dev: Device, n: int) -> None:
    g = np.arange(2 * n, dtype=np.int32) * 10
    a = np.arange(1, n + 1, dtype=np.int32)
    run(dev, EITHER, [g, a], n)
    want_g = [10 * i + (0 if a[i] & 1 else int(a[i])) for i in range(n)]
    want_mine = [100 + (int(a[i]) if a[i] & 1 else 0) for i in range(n)]
    assert g.tolist() == want_g + want_mine


CHECKS = [check_divmod, check_local_array, check_by_value, check_either]


@pytest.mark.parametrize("fe", FRONTS)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_local_memory_on_the_interpreter(check, fe):
    check(Device(frontend=fe), len(A))


def test_clang_at_o0_runs_a_kernel_with_every_variable_in_local_memory():
    src = r"""extern "C" __global__ void k(const int *a, const int *b, int *out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { int s = 0; for (int j = 0; j <= i; j++) s += a[j] * b[i - j]; out[i] = s; }
    }"""
    dev = Device(opt=0)
    module = dev.compile(src)
    assert ".local" in module.ptx                   # -O0 keeps the variables on the stack
    out = np.zeros(8, np.int32)
    fn = module.get_function("k")
    fn(grid=2, block=4, args=[A, B, out, 7])     # two blocks: the second reuses the first's frames
    assert fn.program.shared_words > 0
    want = [sum(int(A[j]) * int(B[i - j]) for j in range(i + 1)) for i in range(7)]
    assert out.tolist() == want + [0]


@pytest.mark.parametrize("fe", FRONTS)
def test_frames_larger_than_shared_memory_are_refused_with_their_sizes(fe):
    src = r"""extern "C" __global__ void k(const int *a, int *out) {
        int buf[130];
        for (int j = 0; j < 130; j++) buf[j] = a[j];
        out[threadIdx.x] = buf[a[threadIdx.x] % 130];
    }"""
    with pytest.raises(MachineLimitError, match=r"needs 520 bytes of local memory a thread \(stack frames and local "
                                                r"arrays: k's 520 bytes\).* 16 threads .* 2080 words .*has 2048"):
        Device(frontend=fe).compile(src).get_function("k")


@pytest.fixture(scope="module")
def model():
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    return Device("model")


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_local_memory_on_the_model(model, check):
    check(model, 4)
