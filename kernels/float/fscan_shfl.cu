// Block-wide inclusive float scan from warp shuffles (warps of 4): each warp scans its
// values with __shfl_up_sync, the last lane publishes the warp total, warp 0 scans the
// totals the same way, and each warp adds the totals of the warps before it.
__device__ __forceinline__ float warp_inclusive_scan(float v, unsigned lane)
{
    for (unsigned offset = 1; offset < warpSize; offset *= 2) {
        float up = __shfl_up_sync(0xf, v, offset, 4);
        if (lane >= offset)
            v += up;
    }
    return v;
}

extern "C" __global__ void fscan_shfl(const float *in, float *out, int n)
{
    __shared__ float warp_total[4];
    unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = warp_inclusive_scan(i < n ? in[i] : 0.0f, lane);
    if (lane == warpSize - 1)
        warp_total[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < blockDim.x / warpSize ? warp_total[lane] : 0.0f;
        warp_total[lane] = warp_inclusive_scan(t, lane);
    }
    __syncthreads();
    if (warp > 0)
        v += warp_total[warp - 1];
    if (i < n)
        out[i] = v;
}
