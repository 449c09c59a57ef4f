// 2D map with a 2D block: x indexes columns, y rows; the block is larger than
// the matrix, so a guard on both coordinates keeps threads inside it.
extern "C" __global__ void map_2d(const int *a, int *out, int rows, int cols)
{
    int c = threadIdx.x, r = threadIdx.y;
    if (r < rows && c < cols)
        out[r * cols + c] = 3 * a[r * cols + c] - r + 2 * c;
}
