// 64-bit division and remainder by runtime divisors, signed and unsigned:
// PTX div/rem .s64/.u64, which a 32-bit machine must expand (a 64-step
// shift-subtract loop, or a call to a helper as nvcc does).
__device__ long long load64(const unsigned *p)
{
    return (long long)(((unsigned long long)p[1] << 32) | p[0]);
}

__device__ void store64(unsigned *p, unsigned long long v)
{
    p[0] = (unsigned)v;
    p[1] = (unsigned)(v >> 32);
}

extern "C" __global__ void int64_div(const unsigned *a, const unsigned *b, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    long long x = load64(a + 2 * i), d = load64(b + 2 * i);
    unsigned *o = out + 8 * i;
    store64(o, x / d);
    store64(o + 2, x % d);
    store64(o + 4, (unsigned long long)x / (unsigned long long)d);
    store64(o + 6, (unsigned long long)x % (unsigned long long)d);
}
