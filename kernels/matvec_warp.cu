// Matrix-vector product y = A x with one warp per row: the lanes stride
// across the row, then a shuffle reduction adds their partial sums.
extern "C" __global__ void matvec_warp(const int *A, const int *x, int *y, int rows, int cols)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int lane = threadIdx.x % warpSize;
    if (row >= rows)
        return;
    int sum = 0;
#pragma unroll 1
    for (int j = lane; j < cols; j += warpSize)
        sum += A[row * cols + j] * x[j];
    sum += __shfl_down_sync(0xf, sum, 2, 4);
    sum += __shfl_down_sync(0xf, sum, 1, 4);
    if (lane == 0)
        y[row] = sum;
}
