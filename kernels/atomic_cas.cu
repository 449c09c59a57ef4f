// Two classic atomicCAS patterns with order-independent results:
//  * a read-modify-write the hardware lacks (multiply), made atomic with a
//    compare-and-swap retry loop;
//  * "claim a slot": the first thread to flip seen[key] from 0 to 1 counts
//    the key, so counters[1] ends as the number of distinct keys.
__device__ int atomic_mul(int *address, int factor)
{
    int old = *address, assumed;
    do {
        assumed = old;
        old = atomicCAS(address, assumed, assumed * factor);
    } while (old != assumed);
    return old;
}

extern "C" __global__ void atomic_cas(const int *factors, const int *keys, int *seen, int *counters, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomic_mul(&counters[0], factors[i]);
        if (atomicCAS(&seen[keys[i]], 0, 1) == 0)
            atomicAdd(&counters[1], 1);
    }
}
