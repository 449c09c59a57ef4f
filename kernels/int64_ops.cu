// 64-bit (long long) arithmetic on values passed as low/high word pairs:
// add with carry, a 32x32->64 multiply, a runtime 64-bit shift and signed
// and unsigned 64-bit compares. Results go back as low/high words.
__device__ long long load64(const unsigned *p, int i)
{
    return (long long)(((unsigned long long)p[2 * i + 1] << 32) | p[2 * i]);
}

__device__ void store64(unsigned *p, int i, unsigned long long v)
{
    p[2 * i] = (unsigned)v;
    p[2 * i + 1] = (unsigned)(v >> 32);
}

__global__ void int64_ops(const unsigned *a, const unsigned *b, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    long long x = load64(a, i), y = load64(b, i);
    unsigned *o = out + 8 * i;
    store64(o, 0, (unsigned long long)x + (unsigned long long)y);
    store64(o, 1, (unsigned long long)a[2 * i] * b[2 * i]);
    store64(o, 2, (unsigned long long)x << (b[2 * i] & 63));
    o[6] = x < y;
    o[7] = (unsigned long long)x < (unsigned long long)y;
}
