// Tiled matrix multiply C = A * B for n x n ints: each 4x4 block stages one
// tile of A and one of B in shared memory per step (zero-filling past the
// edge), with barriers around the tile's inner product.
#define TILE 4

__global__ void matmul_tiled(const int *A, const int *B, int *C, int n)
{
    __shared__ int As[TILE][TILE];
    __shared__ int Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int sum = 0;
#pragma unroll 1
    for (int t = 0; t < n; t += TILE) {
        As[ty][tx] = row < n && t + tx < n ? A[row * n + t + tx] : 0;
        Bs[ty][tx] = t + ty < n && col < n ? B[(t + ty) * n + col] : 0;
        __syncthreads();
#pragma unroll 1
        for (int k = 0; k < TILE; k++)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < n && col < n)
        C[row * n + col] = sum;
}
