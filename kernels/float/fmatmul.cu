// C = A * B for 6x6 float matrices on a 2x2 grid of 4x4 blocks (the edge blocks are
// partial): each thread one element, sum += a * b (a product then a sum, each rounded).
__global__ void fmatmul(const float *A, const float *B, float *C, int n)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n || col >= n)
        return;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += A[row * n + k] * B[k * n + col];
    C[row * n + col] = sum;
}
