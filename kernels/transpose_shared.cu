// Matrix transpose through a shared-memory tile with a 4x4 block: a block
// reads a tile row by row, and after a barrier writes it out column by
// column, so both global accesses are row-contiguous. The +1 column of
// padding is the usual guard against shared-memory bank conflicts.
#define TILE 4

__global__ void transpose_shared(const int *in, int *out, int rows, int cols)
{
    __shared__ int tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < cols && y < rows)
        tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;          // the transposed block
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < rows && y < cols)
        out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
