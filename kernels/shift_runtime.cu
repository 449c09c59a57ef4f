// Shifts by runtime amounts 0..40. C++ leaves shifts by >= 32 undefined, so
// the first three mask the amount like x86 and PTX callers usually do; the
// last one is the defined "shift everything out" idiom.
extern "C" __global__ void shift_runtime(const int *x, const int *s, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = x[i];
        int k = s[i];
        out[4 * i] = (int)((unsigned)v << (k & 31));
        out[4 * i + 1] = (int)((unsigned)v >> (k & 31));
        out[4 * i + 2] = v >> (k & 31);
        out[4 * i + 3] = k >= 32 ? 0 : (int)((unsigned)v << k);
    }
}
