// Block sum with a shared-memory atomicAdd: thread 0 clears the shared
// accumulator, everyone adds into it, and after a barrier thread 0 makes the
// block's single global write.
extern "C" __global__ void atomic_add_shared(const int *in, int *partial, int n)
{
    __shared__ int block_sum;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0)
        block_sum = 0;
    __syncthreads();
    if (i < n)
        atomicAdd(&block_sum, in[i]);
    __syncthreads();
    if (threadIdx.x == 0)
        partial[blockIdx.x] = block_sum;
}
