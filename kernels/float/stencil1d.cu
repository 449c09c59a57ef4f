// A 3-point smoothing stencil, out[i] = 0.25 in[i-1] + 0.5 in[i] + 0.25 in[i+1], the
// ends clamped: each block loads its 16 values and a halo of one on each side into
// shared memory, then each thread adds left to right (every op rounded).
#define B 16
__global__ void stencil1d(const float *in, float *out, int n)
{
    __shared__ float s[B + 2];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x + 1;
    s[t] = in[min(i, n - 1)];
    if (threadIdx.x == 0)
        s[0] = in[max(i - 1, 0)];
    if (threadIdx.x == blockDim.x - 1)
        s[B + 1] = in[min(i + 1, n - 1)];
    __syncthreads();
    if (i < n)
        out[i] = 0.25f * s[t - 1] + 0.5f * s[t] + 0.25f * s[t + 1];
}
