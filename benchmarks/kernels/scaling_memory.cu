// Scaling in memory words: the launch carries all n words of data, but the kernel touches
// two of them, so the prompt grows with n while the generated stream stays the same.
extern "C" __global__ void scaling_memory(int *data, int n) {
    if (threadIdx.x == 0)
        data[0] = data[n - 1];
}
