// Block-wide maximum with sequential addressing in shared memory. Threads
// past the end contribute INT_MIN, the identity of max.
extern "C" __global__ void reduce_max(const int *in, int *block_max, int n)
{
    __shared__ int smax[16];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    smax[tid] = i < n ? in[i] : (int)0x80000000;
    __syncthreads();
#pragma unroll 1
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            smax[tid] = max(smax[tid], smax[tid + s]);
        __syncthreads();
    }
    if (tid == 0)
        block_max[blockIdx.x] = smax[0];
}
