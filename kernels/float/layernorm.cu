// Layer norm of 2 rows of 16 floats, a block a row: the mean and the variance by
// shared-memory trees, inv = 1 / sqrtf(var + eps) (sqrt.rn then rcp.rn: correctly
// rounded, the same bits on any GPU), y = (x - mean) * inv * gamma + beta.
__global__ void layernorm(const float *x, const float *gamma, const float *beta, float *y, float eps)
{
    __shared__ float s[16];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    float v = x[i];
    s[t] = v;
    __syncthreads();
    for (unsigned stride = 8; stride > 0; stride >>= 1) {
        if (t < stride)
            s[t] += s[t + stride];
        __syncthreads();
    }
    float mean = s[0] / 16.0f;
    __syncthreads();
    float d = v - mean;
    s[t] = d * d;
    __syncthreads();
    for (unsigned stride = 8; stride > 0; stride >>= 1) {
        if (t < stride)
            s[t] += s[t + stride];
        __syncthreads();
    }
    float inv = 1.0f / sqrtf(s[0] / 16.0f + eps);
    y[i] = d * inv * gamma[t] + beta[t];
}
