// Floor binning into an integer histogram, a thread an element (4 blocks of 16 over 56):
// t = (x - lo) * inv_width, its bin __float2int_rd(t) (cvt.rmi.s32.f32: saturating, NaN
// gives 0) and floorf(t) kept per element; counted by integer atomicAdd into the block's
// shared histogram of NB bins plus underflow (bin < 0), overflow (bin >= NB) and NaN
// (x != x) slots, which threads 0..NB+2 then add into the global one.
#define NB 8
__global__ void fbin_hist(const float *x, int *bins, float *floors, int *hist, float lo, float inv_width, int n)
{
    __shared__ int sh[NB + 3];
    unsigned t = threadIdx.x;
    if (t < NB + 3)
        sh[t] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) {
        float v = x[i];
        float s = (v - lo) * inv_width;
        int b = __float2int_rd(s);
        bins[i] = b;
        floors[i] = floorf(s);
        int slot = v != v ? NB + 2 : b < 0 ? NB : b >= NB ? NB + 1 : b;
        atomicAdd(&sh[slot], 1);
    }
    __syncthreads();
    if (t < NB + 3)
        atomicAdd(&hist[t], sh[t]);
}
