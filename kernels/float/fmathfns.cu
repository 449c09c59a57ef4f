// The math functions whose result bits are fixed (correctly rounded or exact): sqrtf,
// fabsf, -x, fminf, fmaxf, copysignf, fmodf and x / y, a thread an (x, y) pair, on NaNs
// (with payloads), signed zeros, infinities and subnormals. copysignf of a NaN x is left
// out (0 instead): NVRTC compiles copysignf to copysign.f32, which keeps the NaN's payload,
// clang-19 to abs.f32, neg.f32 and a select, whose NaN is the canonical one.
__global__ void fmathfns(const float *a, const float *b, float *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float x = a[t], y = b[t];
    float *o = out + 8 * t;
    o[0] = sqrtf(x);
    o[1] = fabsf(x);
    o[2] = -x;
    o[3] = fminf(x, y);
    o[4] = fmaxf(x, y);
    o[5] = isnan(x) ? 0.0f : copysignf(x, y);
    o[6] = fmodf(x, y);
    o[7] = x / y;
}
