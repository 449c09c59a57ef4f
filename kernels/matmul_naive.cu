// Naive matrix multiply C = A * B (row-major ints) with a 2D block: each
// thread computes one element of C with a dot product over k.
extern "C" __global__ void matmul_naive(const int *A, const int *B, int *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        int sum = 0;
#pragma unroll 1
        for (int k = 0; k < K; k++)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}
