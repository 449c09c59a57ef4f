// Float dot product over a grid: grid-stride partial sums per thread (a product then a
// sum, each rounded), a shared-memory tree per block, and each block's sum written to
// partial[blockIdx.x] (float addition is not associative: the order is the tree's).
__global__ void fdot_shared(const float *a, const float *b, float *partial, int n)
{
    __shared__ float cache[16];
    unsigned tid = threadIdx.x;
    float sum = 0.0f;
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
        partial[blockIdx.x] = cache[0];
}
