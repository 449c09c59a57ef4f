// 32-bit wraparound: INT_MAX + 1, multiplication overflow, unsigned underflow
// and a signed-add overflow test. Arithmetic is done in unsigned so the
// wrap is defined C++ (signed overflow is UB, which the optimiser may exploit).
extern "C" __global__ void wraparound(const int *a, const int *b, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned x = a[i], y = b[i];
        unsigned sum = x + y;
        out[4 * i] = (int)(x + 1u);
        out[4 * i + 1] = (int)(x * y);
        out[4 * i + 2] = (int)(y - x - 1u);
        // signed overflow iff both operands differ in sign from the sum
        out[4 * i + 3] = (int)(((x ^ sum) & (y ^ sum)) >> 31);
    }
}
