// Block-wide inclusive scan from warp shuffles: every warp scans its four
// values with __shfl_up_sync, the last lane of each warp publishes the warp
// total, warp 0 scans those totals the same way, and each warp then adds the
// totals of the warps before it.
__device__ __forceinline__ int warp_inclusive_scan(int v, unsigned lane)
{
    for (unsigned offset = 1; offset < warpSize; offset *= 2) {
        int up = __shfl_up_sync(0xf, v, offset, 4);
        if (lane >= offset)
            v += up;
    }
    return v;
}

extern "C" __global__ void block_scan_shfl(const int *in, int *out, int n)
{
    __shared__ int warp_total[4];
    unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = warp_inclusive_scan(i < n ? in[i] : 0, lane);
    if (lane == warpSize - 1)
        warp_total[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int t = lane < blockDim.x / warpSize ? warp_total[lane] : 0;
        warp_total[lane] = warp_inclusive_scan(t, lane);
    }
    __syncthreads();
    if (warp > 0)
        v += warp_total[warp - 1];
    if (i < n)
        out[i] = v;
}
