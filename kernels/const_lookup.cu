// Table lookups instead of a switch: a __constant__ table of days per month
// and a writable __device__ table of hash multipliers, both module variables
// that the launch places in memory with their initial values.
__constant__ int days_per_month[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
__device__ unsigned multipliers[7] = {0x9E3779B9u, 0x7F4A7C15u, 0x85EBCA6Bu, 0xC2B2AE35u,
                                      0x27D4EB2Fu, 0x165667B1u, 0xD3A2646Cu};

extern "C" __global__ void const_lookup(const int *month, const int *year, int *days, unsigned *hash, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int m = month[i], y = year[i];
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    days[i] = (unsigned)(m - 1) < 12u ? days_per_month[m] + (m == 2 && leap) : 0;
    hash[i] = (unsigned)y * multipliers[(unsigned)m % 7];
}
