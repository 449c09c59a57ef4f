// Block-wise sort of 4,096 int32 keys: 16 blocks of 16 threads, each sorting its own
// 256-key chunk ascending (signed) in shared memory with a bitonic sorting network, in
// place (keys[256b .. 256b+255] sorted; the chunks are not merged with each other).
// For each merge size k and stride j, the 128 compare-exchange pairs (i, i + j) are
// shared out 8 a thread; pair p's lower index i is p with a 0 bit inserted at bit j,
// and the pair is ordered ascending or descending by bit k of i (branch-free: both
// words are stored, min and max in the pair's order). 36 steps, each ended by a barrier.
#define CHUNK 256
#define THREADS 16

__global__ void sort_4096(int *keys)
{
    __shared__ int s[CHUNK];
    unsigned tid = threadIdx.x;
    int *chunk = keys + blockIdx.x * CHUNK;
#pragma unroll 1
    for (unsigned i = tid; i < CHUNK; i += THREADS)
        s[i] = chunk[i];
    __syncthreads();
#pragma unroll 1
    for (unsigned k = 2; k <= CHUNK; k <<= 1) {
#pragma unroll 1
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
#pragma unroll 1
            for (unsigned p = tid; p < CHUNK / 2; p += THREADS) {
                unsigned i = ((p & ~(j - 1)) << 1) | (p & (j - 1));
                int a = s[i], b = s[i + j];
                int lo = min(a, b), hi = max(a, b);
                bool ascending = (i & k) == 0;
                s[i] = ascending ? lo : hi;
                s[i + j] = ascending ? hi : lo;
            }
            __syncthreads();
        }
    }
#pragma unroll 1
    for (unsigned i = tid; i < CHUNK; i += THREADS)
        chunk[i] = s[i];
}
