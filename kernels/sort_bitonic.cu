// Bitonic sort of 16 unsigned keys in shared memory, one thread per key: for
// each merge size k and stride j, the lower thread of every pair (tid, tid^j)
// orders the pair ascending or descending by bit k of its index.
#define SEG 16

__global__ void sort_bitonic(unsigned *keys)
{
    __shared__ unsigned s[SEG];
    unsigned tid = threadIdx.x;
    s[tid] = keys[tid];
    __syncthreads();
#pragma unroll 1
    for (unsigned k = 2; k <= SEG; k <<= 1) {
#pragma unroll 1
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned partner = tid ^ j;
            if (partner > tid) {
                unsigned a = s[tid], b = s[partner];
                bool ascending = (tid & k) == 0;
                if ((a > b) == ascending) {
                    s[tid] = b;
                    s[partner] = a;
                }
            }
            __syncthreads();
        }
    }
    keys[tid] = s[tid];
}
