// atomicMax, signed and unsigned, into four buckets (bucket = i % 4).
__global__ void atomic_max(const int *in, int *smax, unsigned *umax, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMax(&smax[i & 3], in[i]);
        atomicMax(&umax[i & 3], (unsigned)in[i]);
    }
}
