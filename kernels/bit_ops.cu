// Bit manipulation: population count, leading zeros, bit reverse, unsigned
// and sign-extending bit-field extract, bit-field insert, and an xor swap of
// the two inputs in place.
__global__ void bit_ops(unsigned *x, unsigned *y, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned a = x[i], b = y[i];
    unsigned *o = out + 6 * i;
    o[0] = __popc(a);
    o[1] = __clz(a);
    o[2] = __brev(a);
    o[3] = (a >> 4) & 0x7f;                 // bits 4..10
    o[4] = (unsigned)((int)(a << 12) >> 24); // bits 12..19, sign-extended
    o[5] = (a & ~(0xffu << 8)) | ((b & 0xff) << 8);  // b's low byte into bits 8..15
    a ^= b;
    b ^= a;
    a ^= b;
    x[i] = a;
    y[i] = b;
}
