// 16-bin histogram, privatised per block: bins in shared memory are cleared,
// filled with shared atomics from a grid-stride loop, and after a barrier
// merged into the global histogram with one atomic per non-empty bin.
__global__ void histogram_shared(const unsigned *bytes, unsigned *bins, int n)
{
    __shared__ unsigned local[16];
    for (unsigned b = threadIdx.x; b < 16; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
#pragma unroll 1
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[(bytes[i] & 0xff) >> 4], 1u);
    __syncthreads();
    for (unsigned b = threadIdx.x; b < 16; b += blockDim.x)
        if (local[b] != 0)
            atomicAdd(&bins[b], local[b]);
}
