// 64-bit accumulation, the usual cure for 32-bit overflow: each thread sums
// the signed 32x32->64 products of its row in a long long, then stores the
// sum, an arithmetic right shift of it, a full 64x64 product and the sum
// with its high word sign-extended from the low one, each as low/high words.
__device__ void store64(int *p, long long v)
{
    p[0] = (int)v;
    p[1] = (int)(v >> 32);
}

extern "C" __global__ void int64_accumulate(const int *a, const int *b, int *out, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    long long sum = 0;
#pragma unroll 1
    for (int j = 0; j < cols; j++)
        sum += (long long)a[row * cols + j] * b[row * cols + j];
    int *o = out + 8 * row;
    store64(o, sum);
    store64(o + 2, sum >> 7);
    store64(o + 4, sum * -6700417LL);
    store64(o + 6, (long long)(int)sum - sum);
}
