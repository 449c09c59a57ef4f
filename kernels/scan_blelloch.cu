// Work-efficient exclusive scan (Blelloch): an up-sweep builds partial sums
// in a tree in place, the root is cleared, and a down-sweep pushes prefixes
// back down. Each block of 8 threads scans 16 elements (two per thread).
#define SEG 16

__global__ void scan_blelloch(const int *in, int *out)
{
    __shared__ int temp[SEG];
    unsigned tid = threadIdx.x;
    unsigned base = blockIdx.x * SEG;
    temp[2 * tid] = in[base + 2 * tid];
    temp[2 * tid + 1] = in[base + 2 * tid + 1];

    unsigned offset = 1;
#pragma unroll 1
    for (unsigned d = SEG / 2; d > 0; d >>= 1) {          // up-sweep
        __syncthreads();
        if (tid < d)
            temp[offset * (2 * tid + 2) - 1] += temp[offset * (2 * tid + 1) - 1];
        offset *= 2;
    }
    if (tid == 0)
        temp[SEG - 1] = 0;
#pragma unroll 1
    for (unsigned d = 1; d < SEG; d *= 2) {              // down-sweep
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            unsigned left = offset * (2 * tid + 1) - 1, right = offset * (2 * tid + 2) - 1;
            int t = temp[left];
            temp[left] = temp[right];
            temp[right] += t;
        }
    }
    __syncthreads();
    out[base + 2 * tid] = temp[2 * tid];
    out[base + 2 * tid + 1] = temp[2 * tid + 1];
}
