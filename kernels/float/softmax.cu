// Softmax over 16 floats in one block of 16 threads: a shared-memory tree for the
// maximum (fmaxf), e = expf(x - max), a tree for the sum, then e / sum (div.rn).
__global__ void softmax(const float *x, float *y)
{
    __shared__ float s[16];
    unsigned t = threadIdx.x;
    float v = x[t];
    s[t] = v;
    __syncthreads();
    for (unsigned stride = 8; stride > 0; stride >>= 1) {
        if (t < stride)
            s[t] = fmaxf(s[t], s[t + stride]);
        __syncthreads();
    }
    float m = s[0];
    __syncthreads();
    float e = expf(v - m);
    s[t] = e;
    __syncthreads();
    for (unsigned stride = 8; stride > 0; stride >>= 1) {
        if (t < stride)
            s[t] += s[t + stride];
        __syncthreads();
    }
    y[t] = e / s[0];
}
