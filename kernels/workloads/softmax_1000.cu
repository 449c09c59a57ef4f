// Numerically stable softmax of 1,000 floats in one block of 16 threads:
// y[i] = expf(x[i] - m) / s with m = max x and s = the sum of expf(x[i] - m).
// Each pass is a block-strided loop (thread t takes i = t, t + 16, ...):
//   1. per-thread fmaxf over its elements, then a shared-memory tree (8, 4, 2, 1) for m;
//   2. e = expf(x[i] - m) stored in y[i] and added to a per-thread float sum in i order,
//      then a shared-memory tree for s;
//   3. y[i] = y[i] / s (IEEE division, rounded to nearest).
#define THREADS 16

__device__ float block_reduce(float *buf, float v, bool is_max)
{
    unsigned t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
#pragma unroll 1
    for (unsigned stride = THREADS / 2; stride > 0; stride >>= 1) {
        if (t < stride)
            buf[t] = is_max ? fmaxf(buf[t], buf[t + stride]) : buf[t] + buf[t + stride];
        __syncthreads();
    }
    float r = buf[0];
    __syncthreads();                       // buf is reused by the next reduction
    return r;
}

__global__ void softmax_1000(const float *x, float *y, int n)
{
    __shared__ float buf[THREADS];
    unsigned t = threadIdx.x;
    float m = -INFINITY;
#pragma unroll 1
    for (int i = t; i < n; i += THREADS)
        m = fmaxf(m, x[i]);
    m = block_reduce(buf, m, true);

    float sum = 0.0f;
#pragma unroll 1
    for (int i = t; i < n; i += THREADS) {
        float e = expf(x[i] - m);
        y[i] = e;
        sum += e;
    }
    sum = block_reduce(buf, sum, false);

#pragma unroll 1
    for (int i = t; i < n; i += THREADS)
        y[i] = y[i] / sum;
}
