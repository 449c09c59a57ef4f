// The demo's dot product in float: dot([1.5, 2, 3], [4, 5, 6.25]) = 34.75 with one
// 4-thread block, shared memory and a barrier; the fourth thread is masked off by n.
// Each product is a mul.rn, thread 0 adds the four left to right (add.rn).
extern "C" __global__ void fdot(const float *a, const float *b, float *out, int n)
{
    __shared__ float prod[4];
    int t = threadIdx.x;
    prod[t] = t < n ? a[t] * b[t] : 0.0f;
    __syncthreads();
    if (t == 0)
        *out = prod[0] + prod[1] + prod[2] + prod[3];
}
