// ReLU and clamp with the min/max intrinsics: relu[i] = max(x, 0),
// clamped[i] = min(max(x, lo), hi).
extern "C" __global__ void clamp_relu(const int *x, int *relu, int *clamped, int lo, int hi, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = x[i];
    relu[i] = max(v, 0);
    clamped[i] = min(max(v, lo), hi);
}
