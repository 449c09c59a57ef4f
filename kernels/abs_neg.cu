// abs and negation on 32-bit ints. On a GPU abs(INT_MIN) and -INT_MIN both
// wrap to INT_MIN (abs.s32 / neg.s32); the unsigned magnitude is exact.
extern "C" __global__ void abs_neg(const int *x, int *absval, int *neg, unsigned *mag, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = x[i];
        absval[i] = abs(v);
        neg[i] = -v;
        mag[i] = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    }
}
