// Unsigned division and remainder by a runtime divisor, on values above
// 2^31 where a signed division would give a different answer.
__global__ void div_unsigned(const unsigned *a, const unsigned *b, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned x = a[i], d = b[i];
        out[2 * i] = x / d;
        out[2 * i + 1] = x % d;
    }
}
