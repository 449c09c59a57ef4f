// Inclusive prefix sum of 16 floats in one block (Hillis-Steele): each step reads its
// partner into a register, a barrier, then adds; log2(16) = 4 steps. Float addition is
// not associative, so the result is this order's, not a sequential sum's.
__global__ void fscan_shared(const float *in, float *out)
{
    __shared__ float s[16];
    unsigned t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    for (unsigned offset = 1; offset < 16; offset *= 2) {
        float add = t >= offset ? s[t - offset] : 0.0f;
        __syncthreads();
        s[t] += add;
        __syncthreads();
    }
    out[t] = s[t];
}
