// C = A * B for 32x32 int matrices through 16x16 shared-memory tiles: a 2x2 grid of
// 16x16-thread blocks (256 threads each, run in tiles of the machine's 16 threads:
// docs/lowering.md "Thread tiles"), each thread one element of C.
#define N 32
#define TILE 16

__global__ void matmul256_int32(const int *A, const int *B, int *C)
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
#pragma unroll 4
        for (int k = 0; k < TILE; k++)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * N + col] = sum;
}
