// GPU-Puzzles 1D convolution: out[i] = sum_j a[i + j] * w[j], with a[k] = 0
// past the end. Each block stages its slice of a plus a halo of K-1 words,
// and the filter, in shared memory before anyone reads them.
#define TPB 8
#define K 3

extern "C" __global__ void conv1d_shared(const int *a, const int *w, int *out, int n)
{
    __shared__ int tile[TPB + K - 1];
    __shared__ int filter[K];
    int t = threadIdx.x;
    int i = blockIdx.x * TPB + t;
    tile[t] = i < n ? a[i] : 0;
    if (t < K - 1)
        tile[TPB + t] = i + TPB < n ? a[i + TPB] : 0;
    if (t < K)
        filter[t] = w[t];
    __syncthreads();
    if (i < n) {
        int acc = 0;
        for (int j = 0; j < K; j++)
            acc += tile[t + j] * filter[j];
        out[i] = acc;
    }
}
