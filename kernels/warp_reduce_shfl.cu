// Warp sum with __shfl_down_sync (width 4): after log2(4) steps lane 0 holds
// the sum of its warp's four values and writes it out.
extern "C" __global__ void warp_reduce_shfl(const int *in, int *warp_sums)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xf, v, offset, 4);
    if (threadIdx.x % warpSize == 0)
        warp_sums[i / warpSize] = v;
}
