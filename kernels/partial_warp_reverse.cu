// Blocks of 6 threads: one full warp and one half-empty warp. Each block
// reverses its slice through shared memory, which needs the barrier to
// cover both warps; lane and warp ids go out too.
extern "C" __global__ void partial_warp_reverse(const int *x, int *out, int *ids)
{
    __shared__ int tile[6];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    tile[t] = x[i];
    __syncthreads();
    out[i] = tile[blockDim.x - 1 - t];
    ids[i] = (t / warpSize) * 10 + t % warpSize;
}
