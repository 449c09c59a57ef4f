// CUDA samples reduction #0: interleaved addressing. Each step halves the
// active threads with a modulo test, so the warps diverge heavily. Every
// 16-thread block writes one partial sum.
extern "C" __global__ void reduce0_interleaved(const int *in, int *partial, unsigned n)
{
    __shared__ int sdata[16];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = i < n ? in[i] : 0;
    __syncthreads();
#pragma unroll 1
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = sdata[0];
}
