// Outer "sum": out[r][c] = col[r] + row[c], one thread per output cell on a 2D
// grid of 2D blocks; cells past the matrix edge are skipped.
__global__ void broadcast_add(const int *col, const int *row, int *out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols)
        out[r * cols + c] = col[r] + row[c];
}
