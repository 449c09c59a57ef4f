// Rotate values around each warp by k lanes with an indexed shuffle. The
// source lane threadIdx.x + k is not reduced: __shfl_sync takes it modulo
// the width, which is the wrap-around a rotation needs.
__global__ void warp_rotate(const int *in, int *out, int k)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __shfl_sync(0xf, in[i], threadIdx.x + k, 4);
}
