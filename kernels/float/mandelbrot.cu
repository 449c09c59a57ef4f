// Mandelbrot on a 4x4 grid of points, a thread each: z = z^2 + c up to 32 times, stopping
// when |z|^2 > 4; the iteration count and the last z come out. Every op rounds to
// nearest (zr*zr - zi*zi + cr is mul, mul, sub, add: no fma).
__global__ void mandelbrot(const float *cr, const float *ci, int *count, float *zr_out, float *zi_out, int max_iter)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    float zr = 0.0f, zi = 0.0f;
    int k = 0;
    for (; k < max_iter; ++k) {
        float zr2 = zr * zr, zi2 = zi * zi;
        if (zr2 + zi2 > 4.0f)
            break;
        zi = 2.0f * zr * zi + ci[p];
        zr = zr2 - zi2 + cr[p];
    }
    count[p] = k;
    zr_out[p] = zr;
    zi_out[p] = zi;
}
