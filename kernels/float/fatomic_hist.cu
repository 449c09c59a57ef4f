// Float histogram by atomicAdd: each element adds its weight to a global bin and to its
// block's shared bin; thread t < 8 then adds shared bin t into the global copy. Every
// weight is a multiple of 1/8 and every sum exact, so the order of the atomics (which no
// GPU fixes) does not change the result. Global float atomics flush subnormals, shared
// ones keep them: every thread adds 2^-140 to tiny[0] (global: stays 0) and to a shared
// total that thread 0 stores in tiny[1 + block].
__global__ void fatomic_hist(const int *key, const float *w, float *gbins, float *sbins, float *tiny, int n)
{
    __shared__ float sb[8];
    __shared__ float stiny;
    unsigned t = threadIdx.x;
    if (t < 8)
        sb[t] = 0.0f;
    if (t == 0)
        stiny = 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) {
        atomicAdd(&gbins[key[i]], w[i]);
        atomicAdd(&sb[key[i]], w[i]);
    }
    const float sub = 0x1p-140f;
    atomicAdd(&tiny[0], sub);
    atomicAdd(&stiny, sub);
    __syncthreads();
    if (t < 8)
        atomicAdd(&sbins[t], sb[t]);
    if (t == 0)
        tiny[1 + blockIdx.x] = stiny;
}
