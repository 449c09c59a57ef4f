// Data-dependent trip count: the number of Collatz steps from x down to 1.
// Neighbouring lanes run very different numbers of iterations.
extern "C" __global__ void collatz_steps(const unsigned *x, int *steps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = x[i];
    int count = 0;
#pragma unroll 1
    while (v > 1) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        count++;
    }
    steps[i] = count;
}
