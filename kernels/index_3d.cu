// 3D block and 3D grid: each thread computes its linear global id from the
// x/y/z indices (x fastest) and records who it is.
extern "C" __global__ void index_3d(const int *x, int *out, unsigned *who)
{
    unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    unsigned id = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
    out[id] = x[id] + 1000 * (int)block;
    who[id] = threadIdx.x | threadIdx.y << 4 | threadIdx.z << 8
            | blockIdx.x << 12 | blockIdx.y << 16 | blockIdx.z << 20;
}
