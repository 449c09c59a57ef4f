// LSD radix sort of 16 keys, one bit per pass, with one 16-thread block. Each
// pass is a stable split: keys with the bit clear go first. A key's rank
// among the zeros comes from __ballot_sync + __popc inside its warp plus the
// zero counts of the warps before it (shared memory).
#define KEYS 16

extern "C" __global__ void radix_sort_ballot(unsigned *keys, int bits)
{
    __shared__ unsigned s[KEYS];
    __shared__ int warp_zeros[KEYS / 4];
    unsigned tid = threadIdx.x, lane = tid % warpSize, warp = tid / warpSize;
    unsigned key = keys[tid];
#pragma unroll 1
    for (int bit = 0; bit < bits; bit++) {
        bool zero = ((key >> bit) & 1) == 0;
        unsigned zeros = __ballot_sync(0xf, zero);
        if (lane == 0)
            warp_zeros[warp] = __popc(zeros);
        __syncthreads();
        int zeros_before = __popc(zeros & ((1u << lane) - 1)), total_zeros = 0;
#pragma unroll 1
        for (unsigned w = 0; w < KEYS / 4; w++) {
            zeros_before += w < warp ? warp_zeros[w] : 0;
            total_zeros += warp_zeros[w];
        }
        s[zero ? zeros_before : total_zeros + tid - zeros_before] = key;
        __syncthreads();
        key = s[tid];
        __syncthreads();        // s and warp_zeros are rewritten in the next pass
    }
    keys[tid] = key;
}
