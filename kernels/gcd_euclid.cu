// Euclid's algorithm with remainders; the loop runs a data-dependent number
// of times per thread. gcd(0, 0) is 0.
__global__ void gcd_euclid(const unsigned *a, const unsigned *b, unsigned *g, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned x = a[i], y = b[i];
#pragma unroll 1
    while (y != 0) {
        unsigned t = x % y;
        x = y;
        y = t;
    }
    g[i] = x;
}
