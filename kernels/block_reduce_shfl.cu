// Block sum in two levels: each warp reduces with shuffles, lane 0 parks the
// warp's sum in shared memory, then warp 0 reduces those sums the same way.
extern "C" __global__ void block_reduce_shfl(const int *in, int *partial, int n)
{
    __shared__ int warp_sums[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % warpSize;
    int warp = threadIdx.x / warpSize;
    int v = i < n ? in[i] : 0;
    v += __shfl_down_sync(0xf, v, 2, 4);
    v += __shfl_down_sync(0xf, v, 1, 4);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / warpSize ? warp_sums[lane] : 0;
        v += __shfl_down_sync(0xf, v, 2, 4);
        v += __shfl_down_sync(0xf, v, 1, 4);
        if (lane == 0)
            partial[blockIdx.x] = v;
    }
}
