// Butterfly all-reduce with __shfl_xor_sync (width 4): every lane ends with
// its warp's sum and its warp's unsigned maximum.
__global__ void warp_allreduce_xor(const unsigned *in, unsigned *sum_out, unsigned *max_out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned sum = in[i], mx = in[i];
    for (int mask = 1; mask < 4; mask *= 2) {
        sum += __shfl_xor_sync(0xf, sum, mask, 4);
        mx = max(mx, __shfl_xor_sync(0xf, mx, mask, 4));
    }
    sum_out[i] = sum;
    max_out[i] = mx;
}
