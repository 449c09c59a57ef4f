// Rodinia-style pathfinder: the cheapest path from the top row to each cell
// of the bottom row, moving down, down-left or down-right. One thread per
// column keeps the running cost in shared memory; two barriers per row
// separate reading the previous row from overwriting it. Threads past the
// last column still reach every barrier.
#define MAX_COLS 16

__global__ void pathfinder(const int *wall, int *result, int rows, int cols)
{
    __shared__ int cost[MAX_COLS];
    int c = threadIdx.x;
    bool active = c < cols;
    if (active)
        cost[c] = wall[c];
    __syncthreads();
#pragma unroll 1
    for (int r = 1; r < rows; r++) {
        int best = 0;
        if (active) {
            best = cost[c];
            if (c > 0)
                best = min(best, cost[c - 1]);
            if (c < cols - 1)
                best = min(best, cost[c + 1]);
        }
        __syncthreads();
        if (active)
            cost[c] = best + wall[r * cols + c];
        __syncthreads();
    }
    if (active)
        result[c] = cost[c];
}
