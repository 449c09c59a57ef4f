// Per-block max and argmax by __shfl_xor_sync butterflies (4-lane warps), then across the
// block's four warps through shared memory; every thread then writes x - max. The max is
// fmaxf's (a NaN loses to a number, -0 < +0); the argmax orders (value, index) pairs:
// the greater value wins, equal values (+0 == -0) go to the lower index, a NaN loses to
// any number and two NaNs go to the lower index. Threads past n stand in as NaN
// (__int_as_float(0x7fffffff)) with their own index, so they never win over an element.
__device__ bool beats(float ov, int oi, float v, int i)
{
    return ov > v || (ov == v && oi < i) || (v != v && (ov == ov || oi < i));
}

__global__ void fargmax_shfl(const float *x, float *centred, float *bmax, int *barg, int n)
{
    __shared__ float wmax[4];
    __shared__ float wval[4];
    __shared__ int widx[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    float v = i < n ? x[i] : __int_as_float(0x7fffffff);
    float m = v, bv = v;
    int bi = i;
    for (int mask = 1; mask < 4; mask <<= 1) {
        m = fmaxf(m, __shfl_xor_sync(0xf, m, mask, 4));
        float ov = __shfl_xor_sync(0xf, bv, mask, 4);
        int oi = __shfl_xor_sync(0xf, bi, mask, 4);
        if (beats(ov, oi, bv, bi)) {
            bv = ov;
            bi = oi;
        }
    }
    if (lane == 0) {
        wmax[warp] = m;
        wval[warp] = bv;
        widx[warp] = bi;
    }
    __syncthreads();
    m = wmax[0];
    bv = wval[0];
    bi = widx[0];
    for (int w = 1; w < blockDim.x / warpSize; ++w) {
        m = fmaxf(m, wmax[w]);
        if (beats(wval[w], widx[w], bv, bi)) {
            bv = wval[w];
            bi = widx[w];
        }
    }
    if (i < n)
        centred[i] = v - m;
    if (threadIdx.x == 0) {
        bmax[blockIdx.x] = m;
        barg[blockIdx.x] = bi;
    }
}
