// 5-point Laplacian stencil, out = 4*c - up - down - left - right, on a fixed
// ROWS x COLS matrix with zero padding outside it. Each 4x4 block stages its
// cells plus a one-cell halo on each side in a 6x6 shared tile (the corners
// are never read): every thread loads its own cell, threads on the block's
// edges also load the neighbour beyond that edge, then a barrier.
// Sizes are compile-time constants here; stencil_tile_loop takes them at run
// time (with runtime sizes this version needed 16-20 registers).
#define ROWS 7
#define COLS 6
#define B 4
#define T (B + 2)

__device__ __forceinline__ int cell(const int *a, int r, int c)
{
    // one unsigned compare per coordinate also rejects -1
    return ((unsigned)r < ROWS && (unsigned)c < COLS) ? a[r * COLS + c] : 0;
}

extern "C" __global__ void stencil_2d(const int *a, int *out)
{
    __shared__ int tile[T * T];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * B + ty, c = blockIdx.x * B + tx;
    int *t = tile + (ty + 1) * T + tx + 1;    // this thread's cell in the tile
    t[0] = cell(a, r, c);
    int dr = ty == 0 ? -1 : ty == B - 1 ? 1 : 0;
    if (dr != 0)
        t[dr * T] = cell(a, r + dr, c);
    int dc = tx == 0 ? -1 : tx == B - 1 ? 1 : 0;
    if (dc != 0)
        t[dc] = cell(a, r, c + dc);
    __syncthreads();
    if (r < ROWS && c < COLS)
        out[r * COLS + c] = 4 * t[0] - t[-T] - t[T] - t[-1] - t[1];
}
