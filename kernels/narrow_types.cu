// 8- and 16-bit arithmetic: values are truncated to char/short, computed in
// that width (C promotes to int, the store back to the narrow type
// truncates), then sign- or zero-extended back to 32 bits.
extern "C" __global__ void narrow_types(const int *x, const int *y, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    signed char c = (signed char)x[i];
    unsigned char uc = (unsigned char)y[i];
    short s = (short)x[i];
    unsigned short us = (unsigned short)y[i];
    signed char csum = (signed char)(c + (signed char)y[i]);
    short sprod = (short)(s * (short)y[i]);
    out[6 * i] = c;
    out[6 * i + 1] = uc;
    out[6 * i + 2] = csum;
    out[6 * i + 3] = sprod;
    out[6 * i + 4] = (unsigned short)(us - 1000);
    out[6 * i + 5] = (short)(s >> 3) + (unsigned char)(uc * 3);
}
