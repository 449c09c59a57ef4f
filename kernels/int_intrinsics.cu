// CUDA integer intrinsics: high halves of 32x32 products, find-first-set,
// 24-bit multiplies, sum of absolute differences, and min/max whose result
// depends on signedness (the same bits compare differently as unsigned).
__global__ void int_intrinsics(const int *a, const int *b, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = a[i], y = b[i];
    unsigned ux = x, uy = y;
    unsigned *o = out + 8 * i;
    o[0] = __mulhi(x, y);
    o[1] = __umulhi(ux, uy);
    o[2] = __ffs(x);
    o[3] = __mul24(x, y);
    o[4] = __umul24(ux, uy);
    o[5] = __sad(x, y, 1000u);
    o[6] = min(ux, uy);
    o[7] = max(x, y);
}
