// Float dot product with warp shuffles (warps of 4 lanes): each thread's product, a warp
// sum by __shfl_down_sync on floats (the bits move unchanged), lane 0 parks the warp's
// sum in shared memory, warp 0 reduces the four the same way; one sum per block.
extern "C" __global__ void fdot_shfl(const float *a, const float *b, float *partial, int n)
{
    __shared__ float warp_sums[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % warpSize;
    int warp = threadIdx.x / warpSize;
    float v = i < n ? a[i] * b[i] : 0.0f;
    v += __shfl_down_sync(0xf, v, 2, 4);
    v += __shfl_down_sync(0xf, v, 1, 4);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / warpSize ? warp_sums[lane] : 0.0f;
        v += __shfl_down_sync(0xf, v, 2, 4);
        v += __shfl_down_sync(0xf, v, 1, 4);
        if (lane == 0)
            partial[blockIdx.x] = v;
    }
}
