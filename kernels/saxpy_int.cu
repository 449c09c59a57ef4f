// Integer saxpy: y = a*x + y with 32-bit wraparound (done in unsigned
// arithmetic so the overflow is defined C++).
__global__ void saxpy_int(int n, int a, const int *x, int *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = (int)((unsigned)a * (unsigned)x[i] + (unsigned)y[i]);
}
