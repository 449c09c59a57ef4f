// Grid-stride vector add: every thread walks the array with a stride of the
// whole grid, so any n works with any launch size.
extern "C" __global__ void vec_add(const int *a, const int *b, int *c, int n)
{
    int stride = blockDim.x * gridDim.x;
#pragma unroll 1
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}
