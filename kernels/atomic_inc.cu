// atomicInc as a ring-buffer cursor: each thread takes the next slot in
// 0..wrap (the counter wraps to 0 after reaching wrap) and records the slot it
// got. Which thread gets which slot varies, but how often each slot is handed
// out does not.
extern "C" __global__ void atomic_inc(unsigned *cursor, unsigned *hits, unsigned wrap, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned slot = atomicInc(cursor, wrap);
        atomicAdd(&hits[slot], 1u);
    }
}
