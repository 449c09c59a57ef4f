// Bitonic sort of 16 floats a block in shared memory (3 blocks of 16 threads), twice: once
// with fminf/fmaxf (PTX min/max: a NaN loses to a number, two NaNs give the canonical NaN,
// -0 < +0) and once by compare and select (swap when a > b going up, a < b going down: a
// NaN compares false, so it never moves by its own comparison and its bits, payload and
// all, move unchanged). Thread i handles the pair (i, i ^ j) when i ^ j > i; a barrier
// after every step.
__global__ void fbitonic_sort(float *minmax, float *cmpsel)
{
    __shared__ float sm[16];
    __shared__ float sc[16];
    unsigned i = threadIdx.x;
    unsigned g = blockIdx.x * blockDim.x + i;
    sm[i] = minmax[g];
    sc[i] = cmpsel[g];
    __syncthreads();
    for (unsigned k = 2; k <= 16; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned p = i ^ j;
            if (p > i) {
                bool up = (i & k) == 0;
                float a = sm[i], b = sm[p];
                float lo = fminf(a, b), hi = fmaxf(a, b);
                sm[i] = up ? lo : hi;
                sm[p] = up ? hi : lo;
                float c = sc[i], d = sc[p];
                bool swap = up ? c > d : c < d;
                sc[i] = swap ? d : c;
                sc[p] = swap ? c : d;
            }
            __syncthreads();
        }
    }
    minmax[g] = sm[i];
    cmpsel[g] = sc[i];
}
