// 5-point Laplacian stencil, out = 4*c - up - down - left - right, with zero
// padding outside the matrix. Each 4x4 block stages a 6x6 tile (block plus a
// one-cell halo) in shared memory; 16 threads fill its 36 cells in a strided
// loop, then a barrier.
#define B 4
#define T (B + 2)

extern "C" __global__ void stencil_2d(const int *a, int *out, int rows, int cols)
{
    __shared__ int tile[T * T];
    int tid = threadIdx.y * B + threadIdx.x;
#pragma unroll 1
    for (int k = tid; k < T * T; k += B * B) {
        int r = blockIdx.y * B + k / T - 1;
        int c = blockIdx.x * B + k % T - 1;
        tile[k] = (r >= 0 && r < rows && c >= 0 && c < cols) ? a[r * cols + c] : 0;
    }
    __syncthreads();
    int r = blockIdx.y * B + threadIdx.y, c = blockIdx.x * B + threadIdx.x;
    if (r < rows && c < cols) {
        int k = (threadIdx.y + 1) * T + threadIdx.x + 1;
        out[r * cols + c] = 4 * tile[k] - tile[k - T] - tile[k + T] - tile[k - 1] - tile[k + 1];
    }
}
