// Elementwise activations, a thread an element (3 blocks of 16 over 44): relu as fmaxf(x, 0)
// (-0 gives +0, NaN gives +0), leaky relu x > 0 ? x : x * slope, clamp fminf(fmaxf(x, lo), hi),
// relu6 by compares and selects (x < 0 ? 0 : x > 6 ? 6 : x: -0 and a NaN pass through,
// bits unchanged), fabsf and -x (abs.f32 and neg.f32: a NaN comes out canonical), six
// results an element.
__global__ void factivations(const float *x, float *out, float slope, float lo, float hi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    float *o = out + 6 * i;
    o[0] = fmaxf(v, 0.0f);
    o[1] = v > 0.0f ? v : v * slope;
    o[2] = fminf(fmaxf(v, lo), hi);
    o[3] = v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
    o[4] = fabsf(v);
    o[5] = -v;
}
