// The rounding-mode intrinsics: add, sub, mul, div, fma, sqrt and rcp in rn, rz, rd (toward
// -inf) and ru (toward +inf), PTX's .rn/.rz/.rm/.rp, a thread an (a, b, c) triple.
#define MODES(f, ...) f##_rn(__VA_ARGS__), f##_rz(__VA_ARGS__), f##_rd(__VA_ARGS__), f##_ru(__VA_ARGS__)
__global__ void fround_modes(const float *a, const float *b, const float *c, float *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float x = a[t], y = b[t], z = c[t];
    float *o = out + 28 * t;
    float r[28] = {MODES(__fadd, x, y), MODES(__fsub, x, y), MODES(__fmul, x, y), MODES(__fdiv, x, y),
                   MODES(__fmaf, x, y, z), MODES(__fsqrt, x), MODES(__frcp, y)};
#pragma unroll
    for (int k = 0; k < 28; ++k)
        o[k] = r[k];
}
