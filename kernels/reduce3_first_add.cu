// CUDA samples reduction #3: halve the number of blocks by doing the first
// add while loading from global memory (each thread reads two elements one
// block apart), then reduce in shared memory with sequential addressing.
__global__ void reduce3_first_add(const int *in, int *partial, unsigned n)
{
    __shared__ int sdata[16];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    int sum = i < n ? in[i] : 0;
    if (i + blockDim.x < n)
        sum += in[i + blockDim.x];
    sdata[tid] = sum;
    __syncthreads();
#pragma unroll 1
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] = sum = sum + sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = sum;
}
