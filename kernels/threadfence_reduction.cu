// Single-launch sum in the style of the CUDA sample threadFenceReduction:
// each block reduces its slice and stores a partial sum, makes it visible
// with __threadfence, and takes a ticket from a __device__ counter with
// atomicInc; the block that draws the last ticket adds all the partials and
// resets the counter for the next launch.
__device__ unsigned retired_blocks = 0;

__device__ __forceinline__ int block_sum(int *sdata, int v)
{
    unsigned tid = threadIdx.x;
    sdata[tid] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    return sdata[0];
}

extern "C" __global__ void threadfence_reduction(const int *in, int *partial, int *total, int n)
{
    __shared__ int sdata[16];
    __shared__ bool am_last;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int sum = block_sum(sdata, i < n ? in[i] : 0);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sum;
        __threadfence();
        unsigned ticket = atomicInc(&retired_blocks, gridDim.x);
        am_last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (am_last) {
        int mine = 0;
        for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
            mine += partial[b];
        sum = block_sum(sdata, mine);
        if (threadIdx.x == 0) {
            *total = sum;
            retired_blocks = 0;
        }
    }
}
