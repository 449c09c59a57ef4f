// atomicMin, signed and unsigned, into four buckets (bucket = i % 4). The
// same bits give different minima: -5 is the smallest int but a huge unsigned.
extern "C" __global__ void atomic_min(const int *in, int *smin, unsigned *umin, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMin(&smin[i & 3], in[i]);
        atomicMin(&umin[i & 3], (unsigned)in[i]);
    }
}
