// Nested loops with per-thread trip counts: the outer bound comes from the
// data, the inner bound from the outer index, and the inner loop is left
// early (break) on a data-dependent condition, so lanes leave both loops
// at different iterations and the warp diverges at two depths.
extern "C" __global__ void nested_loops(const int *len, const int *key, int *acc, int *inner_trips)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int n = len[t], k = key[t];
    int sum = 0, trips = 0;
#pragma unroll 1
    for (int i = 0; i < n; i++) {
#pragma unroll 1
        for (int j = 0; j <= i; j++) {
            if ((i * j + k) % 7 == 3)
                break;
            sum += (i ^ j) * (k | 1);
            trips++;
        }
    }
    acc[t] = sum;
    inner_trips[t] = trips;
}
