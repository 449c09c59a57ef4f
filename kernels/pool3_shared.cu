// GPU-Puzzles pooling: out[i] = a[i-2] + a[i-1] + a[i] (missing terms are 0).
// Each block loads its slice plus two words of halo on the left into shared
// memory, waits at the barrier, then sums three neighbours from the tile.
#define TPB 8

__global__ void pool3_shared(const int *a, int *out, int n)
{
    __shared__ int tile[TPB + 2];
    int t = threadIdx.x;
    int i = blockIdx.x * TPB + t;
    tile[t + 2] = i < n ? a[i] : 0;
    if (t < 2)
        tile[t] = i >= 2 ? a[i - 2] : 0;
    __syncthreads();
    if (i < n)
        out[i] = tile[t] + tile[t + 1] + tile[t + 2];
}
