// Block-wide inclusive scan (Hillis-Steele) in shared memory with double
// buffering: each step reads one buffer and writes the other, so a single
// barrier per step is enough. Each block scans its own 16-element segment
// and reports the segment total.
extern "C" __global__ void scan_hillis_steele(const int *in, int *out, int *block_totals, int n)
{
    __shared__ int buf[2][16];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int cur = 0;
    buf[0][tid] = i < n ? in[i] : 0;
    __syncthreads();
#pragma unroll 1
    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
        int v = buf[cur][tid];
        if (tid >= offset)
            v += buf[cur][tid - offset];
        cur ^= 1;
        buf[cur][tid] = v;
        __syncthreads();
    }
    if (i < n)
        out[i] = buf[cur][tid];
    if (tid == blockDim.x - 1)
        block_totals[blockIdx.x] = buf[cur][tid];
}
