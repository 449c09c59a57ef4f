// Integer square root by binary search for the largest r with r*r <= x.
// The search range depends on x, so trip counts differ per thread; the
// comparison r <= x / r avoids overflowing r*r.
extern "C" __global__ void isqrt_bsearch(const unsigned *x, unsigned *root, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned v = x[i];
    unsigned lo = 0, hi = v < 65535u ? v : 65535u;   // answer in [lo, hi]
#pragma unroll 1
    while (lo < hi) {
        unsigned mid = lo + (hi - lo + 1) / 2;
        if (mid <= v / mid)
            lo = mid;
        else
            hi = mid - 1;
    }
    root[i] = lo;
}
