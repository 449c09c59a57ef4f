// Nested divergence: an if/else on lane parity, each side with its own
// data-dependent if/else, so a warp splits into up to four paths that must
// reconverge before the common store.
extern "C" __global__ void nested_divergence(const int *x, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    int r;
    if (threadIdx.x & 1) {
        if (v > 0)
            r = v * 2;
        else
            r = 1 - v;
    } else {
        if (v % 3 == 0)
            r = v / 3;
        else
            r = v + 100;
    }
    out[i] = r + (int)threadIdx.x;
}
