// Dot product over a whole grid ("CUDA by Example" style): grid-stride
// partial products per thread, a shared-memory tree per block, and one
// atomicAdd per block into the result.
__global__ void dot_atomic(const int *a, const int *b, int *result, int n)
{
    __shared__ int cache[16];
    unsigned tid = threadIdx.x;
    int sum = 0;
#pragma unroll 1
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x)
        sum += a[i] * b[i];
    cache[tid] = sum;
    __syncthreads();
#pragma unroll 1
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            cache[tid] += cache[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        atomicAdd(result, cache[0]);
}
