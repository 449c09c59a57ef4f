// saxpy with a fused multiply-add: y = fmaf(a, x, y), one rounding (fma.rn.f32), in a
// grid-stride loop over 2 blocks of 8 threads.
__global__ void saxpy_fma(int n, float a, const float *x, float *y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = fmaf(a, x[i], y[i]);
}
