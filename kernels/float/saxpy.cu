// saxpy: y = a*x + y, one element a thread on 4 blocks of 12 threads. Written as a
// product and a sum, it compiles to mul.rn then add.rn (no contraction into an fma).
__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
