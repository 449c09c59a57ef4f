// atomicXor toggling one bit per value: afterwards a bit is set exactly when
// its value occurred an odd number of times (order does not matter).
extern "C" __global__ void atomic_xor(const int *values, int *parity, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicXor(&parity[values[i] >> 5], 1 << (values[i] & 31));
}
