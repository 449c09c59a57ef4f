// atomicDec counting down with wrap-around to bound: every thread records
// the value it took from the first counter; the second counter starts above
// the bound, so its first decrement jumps to bound.
__global__ void atomic_dec(unsigned *counters, unsigned *hits, unsigned bound, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned old = atomicDec(&counters[0], bound);
        atomicAdd(&hits[old], 1u);
        atomicDec(&counters[1], bound);
    }
}
