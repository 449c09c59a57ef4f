// atomicAnd on a free-slot bitmap: every value marks its slot as taken by
// clearing its bit (slots 0..127, 32 per word).
extern "C" __global__ void atomic_and(const int *taken, unsigned *free_bits, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int slot = taken[i];
        atomicAnd(&free_bits[slot >> 5], ~(1u << (slot & 31)));
    }
}
