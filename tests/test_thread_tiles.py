"""Blocks of more threads than the machine runs at once (64 to 1,024), run in tiles of its 16
(qwengpu/toolchain/threads.py, docs/lowering.md "Thread tiles"): barriers inside loops, early
exits, shared and dynamic shared memory, warps, 2-D and 3-D blocks, local memory, atomics.
Expected values are computed here with NumPy or by hand from CUDA's rules."""
import numpy as np
import pytest

from qwengpu import Device, isa
from qwengpu.errors import MachineLimitError

FRONTS = ["clang", "nvrtc"]

REDUCE = r"""extern "C" __global__ void k(const int *in, int *out) {
    __shared__ int s[1024];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}"""

DYNAMIC = r"""extern "C" __global__ void k(const int *in, int *out, int n) {
    extern __shared__ int s[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half) s[t] = max(s[t], s[t + half]);
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}"""

# threads past n leave before the barrier; the others rotate their values through shared memory
EARLY_EXIT = r"""extern "C" __global__ void k(const int *in, int *out, int n) {
    __shared__ int s[256];
    int t = threadIdx.x;
    if (t >= n) return;
    int x = in[t] * 3;
    s[t] = x;
    __syncthreads();
    out[t] = x - s[(t + 1) % n];
}"""

# C = A x B, 32x32, through 16x16 shared tiles: a 2x2 grid of 16x16 blocks (256 threads each)
MATMUL = r"""#define N 32
#define T 16
extern "C" __global__ void k(const TYPE *A, const TYPE *B, TYPE *C) {
    __shared__ TYPE As[T][T], Bs[T][T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    TYPE sum = 0;
    for (int t = 0; t < N; t += T) {
        As[ty][tx] = A[row * N + t + tx];
        Bs[ty][tx] = B[(t + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < T; k++)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * N + col] = sum;
}"""

# each thread writes its indices and the block's dims; each warp the sum of its lanes' values
INDICES = r"""extern "C" __global__ void k(int *out, int *warps) {
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    out[t] = threadIdx.x + 100 * threadIdx.y + 10000 * threadIdx.z
             + 1000000 * (blockDim.x + 10 * blockDim.y + 100 * blockDim.z);
    int v = t * t;
    for (int d = warpSize / 2; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffff, v, d);
    if (t % warpSize == 0) warps[t / warpSize] = v;
}"""

# a local array indexed at run time, kept across a barrier
LOCAL = r"""extern "C" __global__ void k(const int *in, int *out) {
    __shared__ int s[64];
    int buf[4];
    int t = threadIdx.x;
    for (int j = 0; j < 4; j++) buf[j] = in[t] + j;
    s[t] = buf[in[t] & 3];
    __syncthreads();
    out[t] = s[63 - t] * 10 + buf[(t + 1) & 3];
}"""

HISTOGRAM = r"""extern "C" __global__ void k(const int *in, int *bins, int n) {
    __shared__ int h[16];
    int t = threadIdx.x;
    if (t < 16) h[t] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) atomicAdd(&h[in[i] & 15], 1);
    __syncthreads();
    if (t < 16) atomicAdd(&bins[t], h[t]);
}"""

# x has two definitions, one under a branch on the thread index: kept a word per thread
DIVERGENT_VALUE = r"""extern "C" __global__ void k(const int *in, int *out) {
    __shared__ int s[256];
    int t = threadIdx.x, x = 7;
    if (t % 3 == 1) x = in[t] * 5;
    s[t] = x + 1;
    __syncthreads();
    out[t] = x * 1000 + s[blockDim.x - 1 - t];
}"""

# a branch on a parameter (the same for every thread) with a barrier on each side
TWO_BARRIERS = r"""extern "C" __global__ void k(const int *in, int *out, int mode) {
    __shared__ int s[128];
    int t = threadIdx.x, a;
    s[t] = in[t];
    if (mode > 5) { __syncthreads(); a = s[t ^ 1]; }
    else { __syncthreads(); a = 2 * s[t ^ 3]; }
    __syncthreads();
    s[t] = a + t;
    __syncthreads();
    out[t] = s[(t + 5) % blockDim.x];
}"""

# bitonic sort of a block's keys in shared memory: barriers in two nested loops
BITONIC = r"""extern "C" __global__ void k(int *keys) {
    __shared__ int s[128];
    int t = threadIdx.x;
    s[t] = keys[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int size = 2; size <= blockDim.x; size <<= 1)
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            int other = t ^ stride;
            if (other > t) {
                int a = s[t], b = s[other];
                if (((t & size) == 0) == (a > b)) { s[t] = b; s[other] = a; }
            }
            __syncthreads();
        }
    keys[blockIdx.x * blockDim.x + t] = s[t];
}"""

# inclusive scan (Hillis-Steele, two buffers) of float sums, then an atomic ticket across a barrier
SCAN = r"""extern "C" __global__ void k(const float *in, float *out, int *tickets, int *counter) {
    __shared__ float buf[2][128];
    int t = threadIdx.x, cur = 0;
    int ticket = atomicAdd(counter, 1);
    buf[0][t] = in[t];
    __syncthreads();
    for (int d = 1; d < blockDim.x; d <<= 1) {
        float v = buf[cur][t];
        if (t >= d) v += buf[cur][t - d];
        buf[1 - cur][t] = v;
        cur = 1 - cur;
        __syncthreads();
    }
    out[t] = buf[cur][t];
    tickets[ticket] = t;
}"""

# a 32x32 transpose through a padded shared tile, in 16x16 blocks
TRANSPOSE = r"""extern "C" __global__ void k(const float *in, float *out) {
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * 32 + x];
    __syncthreads();
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    out[y * 32 + x] = tile[threadIdx.x][threadIdx.y];
}"""

# Blelloch's work-efficient exclusive scan of 2 * blockDim.x ints: an up-sweep and a down-sweep
BLELLOCH = r"""extern "C" __global__ void k(const int *in, int *out) {
    __shared__ int s[256];
    int t = threadIdx.x, n = 2 * blockDim.x, offset = 1;
    s[2 * t] = in[2 * t];
    s[2 * t + 1] = in[2 * t + 1];
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) s[offset * (2 * t + 2) - 1] += s[offset * (2 * t + 1) - 1];
        offset *= 2;
    }
    if (t == 0) s[n - 1] = 0;
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
            int v = s[ai];
            s[ai] = s[bi];
            s[bi] += v;
        }
    }
    __syncthreads();
    out[2 * t] = s[2 * t];
    out[2 * t + 1] = s[2 * t + 1];
}"""

# softmax of each row of a 4x100 matrix, one 128-thread block a row: a max and a sum reduction
SOFTMAX = r"""extern "C" __global__ void k(const float *x, float *y, int cols) {
    __shared__ float red[128];
    int t = threadIdx.x;
    const float *row = x + blockIdx.x * cols;
    float m = -INFINITY;
    for (int i = t; i < cols; i += blockDim.x) m = fmaxf(m, row[i]);
    red[t] = m;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) red[t] = fmaxf(red[t], red[t + h]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int i = t; i < cols; i += blockDim.x) sum += __expf(row[i] - m);
    red[t] = sum;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) red[t] += red[t + h];
        __syncthreads();
    }
    for (int i = t; i < cols; i += blockDim.x) y[blockIdx.x * cols + i] = __expf(row[i] - m) / red[0];
}"""


def kernel(dev: Device, src: str, *defines: str):
    return dev.compile("".join(f"#define {d}\n" for d in defines) + src).get_function("k")


def check_reduce(dev, threads=256, blocks=2):
    x = (np.arange(threads * blocks, dtype=np.int64) * 7919 % 100003 - 50000).astype(np.int32)
    out = np.zeros(blocks, np.int32)
    kernel(dev, REDUCE)(grid=blocks, block=threads, args=[x, out])
    assert out.tolist() == x.reshape(blocks, threads).sum(axis=1).tolist()


def check_dynamic(dev, threads=64):
    n = 150
    x = (np.arange(n, dtype=np.int64) * 48271 % 2147 - 1000).astype(np.int32)
    blocks = -(-n // threads)
    out = np.zeros(blocks, np.int32)
    kernel(dev, DYNAMIC)(grid=blocks, block=threads, args=[x, out, n])
    padded = np.concatenate([x, np.zeros(blocks * threads - n, np.int32)])
    assert out.tolist() == padded.reshape(blocks, threads).max(axis=1).tolist()


def check_early_exit(dev, threads=64, n=41):
    x = np.arange(threads, dtype=np.int32) * 5 - 77
    out = np.full(threads, -1, np.int32)
    kernel(dev, EARLY_EXIT)(grid=1, block=threads, args=[x, out, n])
    want = [3 * int(x[t]) - 3 * int(x[(t + 1) % n]) for t in range(n)] + [-1] * (threads - n)
    assert out.tolist() == want


def check_matmul_int(dev):
    rng = np.random.default_rng(33)
    a, b = rng.integers(-2**31, 2**31, (2, 32 * 32), dtype=np.int64).astype(np.int32)
    c = np.zeros(32 * 32, np.int32)
    kernel(dev, MATMUL, "TYPE int")(grid=(2, 2), block=(16, 16), args=[a, b, c])
    want = (a.astype(np.int64).reshape(32, 32) @ b.astype(np.int64).reshape(32, 32)) % 2**32
    assert c.tolist() == want.astype(np.uint32).view(np.int32).reshape(-1).tolist()


def check_matmul_float(dev):
    rng = np.random.default_rng(34)
    a, b = rng.standard_normal((2, 32 * 32)).astype(np.float32)
    c = np.zeros(32 * 32, np.float32)
    kernel(dev, MATMUL, "TYPE float")(grid=(2, 2), block=(16, 16), args=[a, b, c])
    want = np.zeros((32, 32), np.float32)         # the kernel's order: fp32 products added one by one
    A, B = a.reshape(32, 32), b.reshape(32, 32)
    for k in range(32):
        want = want + A[:, k:k + 1] * B[k:k + 1, :]
    assert c.view(np.uint32).tolist() == want.reshape(-1).view(np.uint32).tolist()


def check_indices(dev, block=(8, 8, 4)):
    bx, by, bz = block
    n = bx * by * bz
    out, warps = np.zeros(n, np.int32), np.zeros(n // isa.LANES, np.int32)
    kernel(dev, INDICES)(grid=1, block=block, args=[out, warps])
    t = np.arange(n)
    x, y, z = t % bx, t // bx % by, t // (bx * by)
    assert out.tolist() == (x + 100 * y + 10000 * z + 1000000 * (bx + 10 * by + 100 * bz)).tolist()
    assert warps.tolist() == (t * t).reshape(-1, isa.LANES).sum(axis=1).tolist()


def check_local(dev):
    x = (np.arange(64, dtype=np.int32) * 37) % 101
    out = np.zeros(64, np.int32)
    kernel(dev, LOCAL)(grid=1, block=64, args=[x, out])
    s = [int(v) + (int(v) & 3) for v in x]
    assert out.tolist() == [s[63 - t] * 10 + int(x[t]) + ((t + 1) & 3) for t in range(64)]


def check_histogram(dev):
    n = 1000
    x = (np.arange(n, dtype=np.int64) * 2654435761 % 4093).astype(np.int32)
    bins = np.zeros(16, np.int32)
    kernel(dev, HISTOGRAM)(grid=3, block=128, args=[x, bins, n])
    assert bins.tolist() == np.bincount(x & 15, minlength=16).tolist()


def check_divergent_value(dev, threads=96):
    x = np.arange(threads, dtype=np.int32) * 11 - 300
    out = np.zeros(threads, np.int32)
    kernel(dev, DIVERGENT_VALUE)(grid=1, block=threads, args=[x, out])
    xs = [int(x[t]) * 5 if t % 3 == 1 else 7 for t in range(threads)]
    assert out.tolist() == [xs[t] * 1000 + xs[threads - 1 - t] + 1 for t in range(threads)]


def check_two_barriers(dev, threads=64):
    x = (np.arange(threads, dtype=np.int32) * 29) % 61
    for mode in (9, 2):
        out = np.zeros(threads, np.int32)
        kernel(dev, TWO_BARRIERS)(grid=1, block=threads, args=[x, out, mode])
        a = [int(x[t ^ 1]) if mode > 5 else 2 * int(x[t ^ 3]) for t in range(threads)]
        assert out.tolist() == [a[(t + 5) % threads] + (t + 5) % threads for t in range(threads)]


def check_bitonic(dev, threads=128, blocks=2):
    keys = (np.arange(threads * blocks, dtype=np.int64) * 2654435761 % 1000003 - 500000).astype(np.int32)
    want = np.sort(keys.reshape(blocks, threads), axis=1).reshape(-1)
    kernel(dev, BITONIC)(grid=blocks, block=threads, args=[keys])
    assert keys.tolist() == want.tolist()


def check_scan(dev, threads=64):
    x = np.random.default_rng(35).standard_normal(threads).astype(np.float32)
    out, tickets, counter = np.zeros(threads, np.float32), np.full(threads, -1, np.int32), np.zeros(1, np.int32)
    kernel(dev, SCAN)(grid=1, block=threads, args=[x, out, tickets, counter])
    want, d = x.copy(), 1            # the kernel's sums, in its order: each step adds the value d back
    while d < threads:
        want = np.concatenate([want[:d], want[d:] + want[:-d]])
        d *= 2
    assert out.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    assert counter[0] == threads and sorted(tickets.tolist()) == list(range(threads))


def check_transpose(dev):
    x = np.random.default_rng(36).standard_normal(32 * 32).astype(np.float32)
    out = np.zeros(32 * 32, np.float32)
    kernel(dev, TRANSPOSE)(grid=(2, 2), block=(16, 16), args=[x, out])
    assert out.view(np.uint32).tolist() == x.reshape(32, 32).T.reshape(-1).view(np.uint32).tolist()


def check_blelloch(dev, threads=64):
    x = (np.arange(2 * threads, dtype=np.int64) * 7919 % 1009 - 500).astype(np.int32)
    out = np.zeros(2 * threads, np.int32)
    kernel(dev, BLELLOCH)(grid=1, block=threads, args=[x, out])
    assert out.tolist() == np.concatenate([[0], np.cumsum(x)[:-1]]).tolist()


def check_softmax(dev):
    """Against NumPy's softmax to 1e-5: __expf is not NumPy's exp, nor its sums in this order (a
    bit-exact softmax reference is kernels/workloads/softmax_1000's)."""
    cols = 100
    x = np.random.default_rng(37).standard_normal(4 * cols).astype(np.float32) * 3
    y = np.zeros(4 * cols, np.float32)
    kernel(dev, SOFTMAX)(grid=4, block=128, args=[x, y, cols])
    want = np.exp(x.reshape(4, cols) - x.reshape(4, cols).max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    assert np.allclose(y.reshape(4, cols), want, rtol=1e-5, atol=1e-7)


CHECKS = [check_reduce, check_dynamic, check_early_exit, check_matmul_int, check_matmul_float, check_local,
          check_histogram, check_divergent_value, check_two_barriers, check_bitonic, check_scan, check_transpose,
          check_blelloch, check_softmax]


@pytest.mark.parametrize("fe", FRONTS)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_tiled_blocks_on_the_interpreter(check, fe):
    check(Device(frontend=fe))


@pytest.mark.parametrize("check", [check_early_exit, check_blelloch, check_two_barriers], ids=lambda c: c.__name__)
def test_tiled_blocks_at_O0(check):
    """clang -O0 keeps every variable in local memory: a frame for each of the block's threads."""
    check(Device(opt=0))


@pytest.mark.parametrize("block", [(64, 1, 1), (32, 2, 1), (8, 8, 4), (4, 2, 8), (2, 4, 4), (1, 16, 3), (1024, 1, 1)])
def test_every_tile_shape_sees_its_thread_indices_and_warps(block):
    check_indices(Device(), block)


@pytest.mark.parametrize("threads", [32, 128, 512, 1024])
def test_reductions_of_every_size(threads):
    check_reduce(Device(), threads, blocks=1)


def test_a_block_of_16_threads_or_fewer_is_not_tiled():
    fn = kernel(Device(), REDUCE)
    assert fn.program_for(16) is fn.program and fn.program.tile is None
    assert fn.program_for((8, 8)).tile == (8, 2, 1) and fn.program_for(64).tile == (16, 1, 1)


def test_a_save_area_larger_than_shared_memory_is_refused_with_its_size():
    src = r"""extern "C" __global__ void k(const int *in, int *out) {
        __shared__ int s[1024];
        int t = threadIdx.x, a = in[t], b = in[t + 1], c = in[t + 2];
        s[t] = a;
        __syncthreads();
        out[t] = s[1023 - t] + a * b + c;
    }"""
    fn = Device().compile(src).get_function("k")
    x, out = np.zeros(1026, np.int32), np.zeros(1024, np.int32)
    with pytest.raises(MachineLimitError, match=r"a block of \(1024, 1, 1\) runs as 64 tiles of 16 threads, and "
                                                r"what lives across its barriers takes \d words a thread \(\d+ words "
                                                r"of shared memory after the kernel's own 1024\); the machine has 2048"):
        fn(grid=1, block=1024, args=[x, out])


def test_a_tiled_program_past_the_rom_says_why():
    steps = "".join(f"    s[t] += s[(t + {k}) % 32];\n    __syncthreads();\n" for k in range(1, 40))
    src = ('extern "C" __global__ void k(int *out) {\n    __shared__ int s[32];\n    int t = threadIdx.x;\n'
           f"    s[t] = t;\n    __syncthreads();\n{steps}    out[t] = s[t];\n}}")
    fn = Device().compile(src).get_function("k")
    assert len(fn.program.blocks) <= isa.ROM_BLOCKS                 # 16 threads: no tiles, it fits
    with pytest.raises(MachineLimitError, match=r"needs \d+ ROM blocks for a block of \(32, 1, 1\) threads, which "
                                                r"runs in tiles of 16 .* the ROM holds 128"):
        fn.launch(1, 32, [np.zeros(32, np.int32)])


@pytest.fixture(scope="module")
def model():
    from qwengpu.model.merge import default_merged_model
    default_merged_model()          # builds build/standin-merged on first use (minutes)
    return Device("model", check="replay")


MODEL_CHECKS = [(check_reduce, dict(threads=32, blocks=1)), (check_early_exit, {}),
                (check_indices, dict(block=(4, 2, 4))), (check_divergent_value, dict(threads=32)),
                (check_two_barriers, dict(threads=32)), (check_local, {}), (check_scan, dict(threads=32))]


@pytest.mark.parametrize("check, kwargs", MODEL_CHECKS, ids=lambda c: getattr(c, "__name__", ""))
def test_tiled_blocks_on_the_model(model, check, kwargs):
    check(model, **kwargs)
