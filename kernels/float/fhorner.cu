// Horner evaluation of a degree-7 polynomial (coefficients in shared memory, loaded by
// threads 0..7) at one x a thread (2 blocks of 16 over 28), in each rounding mode:
// p = p * x + c[k] as a rounded product then a rounded sum (__fmul_r? then __fadd_r?, no
// fma), from c[7] down to c[0]; out[4t .. 4t+3] is the rn, rz, rd, ru result.
#define HORNER(mode)                                                  \
    do {                                                              \
        float p = c[7];                                               \
        _Pragma("unroll") for (int k = 6; k >= 0; --k)                \
            p = __fadd_##mode(__fmul_##mode(p, x), c[k]);             \
        *o++ = p;                                                     \
    } while (0)

__global__ void fhorner(const float *coef, const float *xs, float *out, int n)
{
    __shared__ float c[8];
    if (threadIdx.x < 8)
        c[threadIdx.x] = coef[threadIdx.x];
    __syncthreads();
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float x = xs[t];
    float *o = out + 4 * t;
    HORNER(rn);
    HORNER(rz);
    HORNER(rd);
    HORNER(ru);
}
