// The sum of 4,096 int32s (wrapping modulo 2^32) in one block of 1,024 threads, CUDA's largest:
// each thread adds four inputs a block apart, then a tree reduction through shared memory
// halves the active threads at each barrier. The machine runs the block in 64 tiles of its
// 16 threads (docs/lowering.md "Thread tiles").
#define N 4096

__global__ void reduce_1024(const int *in, int *out)
{
    __shared__ int s[1024];
    int t = threadIdx.x;
    int sum = 0;
    for (int i = t; i < N; i += blockDim.x)
        sum += in[i];
    s[t] = sum;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (t < half)
            s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0)
        out[0] = s[0];
}
