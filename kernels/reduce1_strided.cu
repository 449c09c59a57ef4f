// CUDA samples reduction #1: interleaved addressing with a strided index, so
// the active threads stay contiguous (no modulo, less divergence).
__global__ void reduce1_strided(const int *in, int *partial, int n)
{
    __shared__ int sdata[16];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = i < n ? in[i] : 0;
    __syncthreads();
#pragma unroll 1
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        unsigned index = 2 * s * tid;
        if (index < blockDim.x)
            sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = sdata[0];
}
