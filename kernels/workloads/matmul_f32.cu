// C = A * B for 32x32 float32 matrices (1,024 words each, 3,072 in all), tiled through
// shared memory exactly like matmul_int32: an 8x8 grid of 4x4-thread blocks, a 4x4 tile
// of A and of B staged per step. Each thread accumulates sum += a * b for k = 0..31 in
// order, the product and the sum each rounded to nearest (no fused multiply-add).
#define N 32
#define TILE 4

__global__ void matmul_f32(const float *A, const float *B, float *C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
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
