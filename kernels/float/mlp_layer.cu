// One MLP layer, y = relu(W x + b): a thread an output, the sum started from the bias and
// accumulated with fmaf, then fmaxf(0, .) (PTX max: NaN gives 0, and -0 becomes +0).
__global__ void mlp_layer(const float *W, const float *x, const float *bias, float *y, int outs, int ins)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= outs)
        return;
    float acc = bias[j];
    for (int k = 0; k < ins; ++k)
        acc = fmaf(W[j * ins + k], x[k], acc);
    y[j] = fmaxf(0.0f, acc);
}
