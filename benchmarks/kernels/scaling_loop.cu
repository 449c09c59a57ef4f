// Scaling in dynamic instructions: each lane runs a loop of n trips (a geometric recurrence
// that clang cannot fold into a closed form; not unrolled), so the work grows linearly with n.
extern "C" __global__ void scaling_loop(int *out, int n) {
    int acc = threadIdx.x;
#pragma unroll 1
    for (int i = 0; i < n; i++)
        acc = acc * 3 + i;
    out[threadIdx.x] = acc;
}
