// Connected components of a path graph by label propagation: node t links
// to t+1 when link[t] is set. Every round each node takes the smallest label
// among itself and its linked neighbours; the block repeats until a round
// changes nothing, a trip count that depends on the data and is read by all
// threads from a shared flag. Three barriers per round keep the reads, the
// writes and the flag reset apart.
#define MAX_NODES 16

__global__ void label_propagation(int *label, const int *link, int *rounds, int n)
{
    __shared__ int cur[MAX_NODES];
    __shared__ int changed;
    int t = threadIdx.x;
    bool node = t < n;
    if (node)
        cur[t] = label[t];
    int round = 0;
#pragma unroll 1
    do {
        __syncthreads();                    // labels written, last flag read done
        if (t == 0)
            changed = 0;
        int best = 0;
        if (node) {
            best = cur[t];
            if (t > 0 && link[t - 1])
                best = min(best, cur[t - 1]);
            if (t < n - 1 && link[t])
                best = min(best, cur[t + 1]);
        }
        __syncthreads();                    // all reads done, flag reset visible
        if (node && best != cur[t]) {
            cur[t] = best;
            changed = 1;
        }
        __syncthreads();                    // writes and flag visible
        round++;
    } while (changed);
    if (node)
        label[t] = cur[t];
    if (t == 0)
        rounds[0] = round;
}
