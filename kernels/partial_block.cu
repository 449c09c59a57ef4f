// n is smaller than the grid's thread count: the last busy block is only
// partly active and the block after it has no work at all.
__global__ void partial_block(const int *x, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = x[i] * (int)blockIdx.x - i;
}
