// One Jacobi step of a 5-point stencil on an 8x8 grid of floats, 2x2 blocks of 4x4
// threads: an interior point becomes 0.2 * (c + n + s + w + e) summed left to right;
// the border is copied.
__global__ void stencil2d(const float *u, float *v, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
        v[i] = u[i];
    else
        v[i] = 0.2f * (u[i] + u[i - w] + u[i + w] + u[i - 1] + u[i + 1]);
}
