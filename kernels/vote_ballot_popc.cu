// __ballot_sync with a data predicate: each warp records which of its lanes
// hold a negative value, and __popc of that mask counts them.
extern "C" __global__ void vote_ballot_popc(const int *in, unsigned *neg_mask, int *neg_count, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned negative = __ballot_sync(0xf, i < n && in[i] < 0);
    if (threadIdx.x % warpSize == 0) {
        neg_mask[i / warpSize] = negative;
        neg_count[i / warpSize] = __popc(negative);
    }
}
