// CUDA samples reduction #2: sequential addressing. The stride starts at half
// the block and halves, so the first threads stay busy (no bank conflicts on
// a real GPU). Unsigned data.
extern "C" __global__ void reduce2_sequential(const unsigned *in, unsigned *partial, unsigned n)
{
    __shared__ unsigned sdata[16];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = i < n ? in[i] : 0u;
    __syncthreads();
#pragma unroll 1
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = sdata[0];
}
