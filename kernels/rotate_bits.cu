// Rotations by runtime amounts, written the portable way: C++ has no rotate
// operator, and the (32 - k) & 31 form avoids an undefined shift by 32.
// Compilers recognise the idiom and emit a funnel shift (shf.l/shf.r.wrap).
__global__ void rotate_bits(const unsigned *x, const int *k, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v = x[i];
        unsigned s = k[i] & 31;
        out[2 * i] = (v << s) | (v >> ((32 - s) & 31));
        out[2 * i + 1] = (v >> s) | (v << ((32 - s) & 31));
    }
}
