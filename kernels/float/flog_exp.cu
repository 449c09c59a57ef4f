// logf, log2f and expf, a thread an input: CUDA's math library (libdevice under clang,
// NVRTC's own: the same sequences), logf and log2f built from rounded ops only, expf
// around ex2.approx.ftz (defined by docs/isa.md).
__global__ void flog_exp(const float *x, const float *y, float *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        out[3 * t + 0] = logf(x[t]);
        out[3 * t + 1] = log2f(x[t]);
        out[3 * t + 2] = expf(y[t]);
    }
}
