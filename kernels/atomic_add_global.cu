// Global atomicAdd from every thread of a multi-block grid: a running sum of
// all elements and a count of the positive ones.
extern "C" __global__ void atomic_add_global(const int *in, int *totals, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&totals[0], in[i]);
        if (in[i] > 0)
            atomicAdd(&totals[1], 1);
    }
}
