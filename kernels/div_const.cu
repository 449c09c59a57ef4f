// Division and remainder by compile-time constants: the compiler turns these
// into multiply-high "magic number" sequences and shifts, with sign fix-ups.
__global__ void div_const(const int *x, int *out, unsigned *uout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = x[i];
    int *o = out + 8 * i;
    o[0] = v / 7;
    o[1] = v % 7;
    o[2] = v / -3;
    o[3] = v % -3;
    o[4] = v / 10;
    o[5] = v % 10;
    o[6] = v / 16;
    o[7] = v % 16;
    unsigned u = (unsigned)v;
    uout[2 * i] = u / 10;
    uout[2 * i + 1] = u % 7;
}
