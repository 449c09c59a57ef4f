// 5-point Laplacian (out = 4*c - up - down - left - right, zero padding) on a
// rows x cols matrix given at run time. Each 4x4 block fills a 6x6 shared
// tile, its cells plus a one-cell halo, with a strided loop: 16 threads, 36
// cells, so some threads load three cells and some two. Then a barrier.
#define B 4
#define T (B + 2)

extern "C" __global__ void stencil_tile_loop(const int *a, int *out, int rows, int cols)
{
    __shared__ int tile[T * T];
    int tid = threadIdx.y * B + threadIdx.x;
#pragma unroll 1
    for (int k = tid; k < T * T; k += B * B) {
        int r = blockIdx.y * B + k / T - 1;
        int c = blockIdx.x * B + k % T - 1;
        bool inside = (unsigned)r < (unsigned)rows && (unsigned)c < (unsigned)cols;
        tile[k] = inside ? a[r * cols + c] : 0;
    }
    __syncthreads();
    int r = blockIdx.y * B + threadIdx.y, c = blockIdx.x * B + threadIdx.x;
    if (r < rows && c < cols) {
        int k = (threadIdx.y + 1) * T + threadIdx.x + 1;
        out[r * cols + c] = 4 * tile[k] - tile[k - T] - tile[k + T] - tile[k - 1] - tile[k + 1];
    }
}
