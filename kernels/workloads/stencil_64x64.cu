// 5-point Laplacian stencil, out = 4*c - up - down - left - right, on a 64x64 int32
// image (4,096 words in, 4,096 out) with zero borders (cells outside the image read 0).
// A 16x16 grid of 4x4-thread blocks (256 blocks of 16 threads), one output cell a
// thread: each block stages its 4x4 cells and a one-cell halo in a 6x6 shared tile
// (the 36 words loaded by the block's 16 threads in a strided loop; the corners are
// loaded but never read), then a barrier, then each thread combines five tile words.
#define W 64
#define H 64
#define B 4
#define T (B + 2)

__global__ void stencil_64x64(const int *in, int *out)
{
    __shared__ int tile[T * T];
    int tid = threadIdx.y * B + threadIdx.x;
    int r0 = blockIdx.y * B - 1, c0 = blockIdx.x * B - 1;   // the tile's top-left cell
#pragma unroll 1
    for (int i = tid; i < T * T; i += B * B) {
        int r = r0 + i / T, c = c0 + i % T;
        tile[i] = ((unsigned)r < H && (unsigned)c < W) ? in[r * W + c] : 0;
    }
    __syncthreads();
    int ty = threadIdx.y + 1, tx = threadIdx.x + 1;
    int v = 4 * tile[ty * T + tx] - tile[(ty - 1) * T + tx] - tile[(ty + 1) * T + tx]
            - tile[ty * T + tx - 1] - tile[ty * T + tx + 1];
    out[(r0 + ty) * W + c0 + tx] = v;
}
