// Threads with no element return before the barrier, a common CUDA pattern
// (`if (i >= n) return;` ahead of __syncthreads()): the barrier must release
// once every thread that has not exited arrives. Each block reverses the
// part of its slice that lies inside the array.
__global__ void exit_before_barrier(const int *x, int *out, int n)
{
    __shared__ int tile[16];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    if (base + t >= n)
        return;
    tile[t] = x[base + t];
    __syncthreads();
    int count = min(n - base, (int)blockDim.x);     // elements in this block
    out[base + t] = tile[count - 1 - t];
}
