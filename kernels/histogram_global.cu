// 16-bin histogram of byte values with global atomicAdd, grid-stride loop.
extern "C" __global__ void histogram_global(const unsigned *bytes, unsigned *bins, int n)
{
#pragma unroll 1
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&bins[(bytes[i] & 0xff) >> 4], 1u);
}
