// Odd-even transposition sort of 16 ints per block in shared memory: 16
// phases alternate between comparing pairs (0,1),(2,3),... and (1,2),(3,4),...
// with a barrier between phases. 8 threads, one pair each.
#define SEG 16

extern "C" __global__ void sort_odd_even(int *data)
{
    __shared__ int s[SEG];
    unsigned tid = threadIdx.x;
    int *seg = data + blockIdx.x * SEG;
    s[2 * tid] = seg[2 * tid];
    s[2 * tid + 1] = seg[2 * tid + 1];
    __syncthreads();
#pragma unroll 1
    for (unsigned phase = 0; phase < SEG; phase++) {
        unsigned i = 2 * tid + (phase & 1);
        if (i + 1 < SEG) {
            int a = s[i], b = s[i + 1];
            if (a > b) {
                s[i] = b;
                s[i + 1] = a;
            }
        }
        __syncthreads();
    }
    seg[2 * tid] = s[2 * tid];
    seg[2 * tid + 1] = s[2 * tid + 1];
}
