// Conversions in every rounding mode, a thread an input: float -> int and unsigned
// (__float2int_rn/rz/rd/ru, __float2uint_*: saturating, NaN gives 0), float -> integral
// float (floorf, ceilf, truncf, roundf, rintf), int and unsigned -> float
// (__int2float_*, __uint2float_*).
__global__ void fconvert(const float *x, const int *iv, const unsigned *uv, int *f2i, unsigned *f2u,
                         float *rnd, float *i2f, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float v = x[t];
    f2i[4 * t + 0] = __float2int_rn(v);
    f2i[4 * t + 1] = __float2int_rz(v);
    f2i[4 * t + 2] = __float2int_rd(v);
    f2i[4 * t + 3] = __float2int_ru(v);
    f2u[4 * t + 0] = __float2uint_rn(v);
    f2u[4 * t + 1] = __float2uint_rz(v);
    f2u[4 * t + 2] = __float2uint_rd(v);
    f2u[4 * t + 3] = __float2uint_ru(v);
    rnd[5 * t + 0] = floorf(v);
    rnd[5 * t + 1] = ceilf(v);
    rnd[5 * t + 2] = truncf(v);
    rnd[5 * t + 3] = roundf(v);
    rnd[5 * t + 4] = rintf(v);
    int i = iv[t];
    unsigned u = uv[t];
    i2f[8 * t + 0] = __int2float_rn(i);
    i2f[8 * t + 1] = __int2float_rz(i);
    i2f[8 * t + 2] = __int2float_rd(i);
    i2f[8 * t + 3] = __int2float_ru(i);
    i2f[8 * t + 4] = __uint2float_rn(u);
    i2f[8 * t + 5] = __uint2float_rz(u);
    i2f[8 * t + 6] = __uint2float_rd(u);
    i2f[8 * t + 7] = __uint2float_ru(u);
}
