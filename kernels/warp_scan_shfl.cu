// Inclusive warp scan with __shfl_up_sync (Hillis-Steele in registers):
// lanes below the offset keep their value.
extern "C" __global__ void warp_scan_shfl(const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & (warpSize - 1);
    int v = i < n ? in[i] : 0;
    for (int offset = 1; offset < warpSize; offset *= 2) {
        int up = __shfl_up_sync(0xf, v, offset, 4);
        if (lane >= offset)
            v += up;
    }
    if (i < n)
        out[i] = v;
}
