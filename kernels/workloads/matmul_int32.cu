// C = A * B for 32x32 int32 matrices (1,024 words each, 3,072 in all), tiled through
// shared memory: an 8x8 grid of 4x4-thread blocks, each thread one element of C; per
// step a block stages a 4x4 tile of A and one of B, then accumulates their product.
// Sums wrap modulo 2^32 as CUDA's int arithmetic does.
#define N 32
#define TILE 4

__global__ void matmul_int32(const int *A, const int *B, int *C)
{
    __shared__ int As[TILE][TILE];
    __shared__ int Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    int sum = 0;
#pragma unroll 1
    for (int t = 0; t < N; t += TILE) {
        As[ty][tx] = A[row * N + t + tx];
        Bs[ty][tx] = B[(t + ty) * N + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * N + col] = sum;
}
