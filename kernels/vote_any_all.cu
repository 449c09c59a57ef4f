// Warp votes steering a warp-uniform branch: a warp whose values are all
// non-negative keeps them; otherwise, if any lane holds a zero the warp is
// cleared, else every value is negated. Lane 0 records the case taken.
__global__ void vote_any_all(const int *in, int *out, int *warp_case)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    int taken;
    if (__all_sync(0xf, v >= 0)) {
        out[i] = v;
        taken = 0;
    } else if (__any_sync(0xf, v == 0)) {
        out[i] = 0;
        taken = 1;
    } else {
        out[i] = -v;
        taken = 2;
    }
    if (threadIdx.x % warpSize == 0)
        warp_case[i / warpSize] = taken;
}
