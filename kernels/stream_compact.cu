// Order-preserving stream compaction of the positive values with one block
// of 16 threads walking the input in chunks. In each warp __ballot_sync marks
// the keepers and __popc of the lower lanes' bits is a keeper's rank; the
// warps' counts go through shared memory to give each warp its offset.
extern "C" __global__ void stream_compact(const int *in, int *out, int *count, int n)
{
    __shared__ int warp_count[4];
    unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    int written = 0;
#pragma unroll 1
    for (int start = 0; start < n; start += blockDim.x) {
        int i = start + threadIdx.x;
        int v = i < n ? in[i] : 0;
        unsigned keepers = __ballot_sync(0xf, v > 0);
        if (lane == 0)
            warp_count[warp] = __popc(keepers);
        __syncthreads();
        int pos = written + __popc(keepers & ((1u << lane) - 1));
#pragma unroll 1
        for (unsigned w = 0; w < warp; w++)
            pos += warp_count[w];
        if (v > 0)
            out[pos] = v;
        written += warp_count[0] + warp_count[1] + warp_count[2] + warp_count[3];
        __syncthreads();        // warp_count is rewritten in the next chunk
    }
    if (threadIdx.x == 0)
        *count = written;
}
