// 256-bin histogram of 16,384 bytes, packed four to a word (4,096 words, the first byte
// in the low 8 bits). 16 blocks of 16 threads; each block keeps private bins in shared
// memory (cleared by a strided loop), walks the words in a grid-stride loop and counts
// each word's four bytes with shared atomicAdd, then after a barrier adds every
// non-empty bin into the global bins with one atomicAdd.
#define BINS 256

__global__ void histogram_16k(const unsigned *words, unsigned *bins, int n_words)
{
    __shared__ unsigned local[BINS];
#pragma unroll 1
    for (unsigned b = threadIdx.x; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
#pragma unroll 1
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n_words; i += blockDim.x * gridDim.x) {
        unsigned w = words[i];
        atomicAdd(&local[w & 0xff], 1u);
        atomicAdd(&local[(w >> 8) & 0xff], 1u);
        atomicAdd(&local[(w >> 16) & 0xff], 1u);
        atomicAdd(&local[w >> 24], 1u);
    }
    __syncthreads();
#pragma unroll 1
    for (unsigned b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned count = local[b];
        if (count != 0)
            atomicAdd(&bins[b], count);
    }
}
