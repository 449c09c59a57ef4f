// atomicOr building the set of values seen (a 128-bit bitmap); the old word
// it returns tells each thread whether its bit was new, so the number of
// distinct values is counted exactly once per value.
__global__ void atomic_or(const int *values, unsigned *present, int *distinct, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = values[i];
        unsigned bit = 1u << (v & 31);
        if ((atomicOr(&present[v >> 5], bit) & bit) == 0)
            atomicAdd(distinct, 1);
    }
}
