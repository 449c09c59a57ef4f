// Broadcast within a warp: every lane reads lane 2's value with an indexed
// __shfl_sync, and adds it to its own.
extern "C" __global__ void warp_broadcast(const int *in, int *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    int from_lane2 = __shfl_sync(0xf, v, 2, 4);
    out[i] = v + from_lane2;
}
