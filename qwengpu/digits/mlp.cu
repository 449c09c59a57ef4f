// The digit classifier's inference (qwengpu/digits): a 64-8-10 ReLU network on 8x8 images, one
// thread block per image. Thread j < HIDDEN computes hidden unit j into shared memory, then
// thread j < CLASSES logit j. fmaf fixes the rounding: one fp32 fma a step, in pixel order. The
// weights are stored input-major (w1[i][j]), so a warp's lanes read neighbouring words: their
// addresses are one progression, one token to write back.
#define PIXELS 64
#define HIDDEN 8
#define CLASSES 10

extern "C" __global__ void mlp(const float *w1, const float *b1, const float *w2, const float *b2,
                               const float *images, float *logits) {
    __shared__ float hidden[HIDDEN];
    const float *x = images + blockIdx.x * PIXELS;
    int j = threadIdx.x;
    if (j < HIDDEN) {
        float acc = b1[j];
        for (int i = 0; i < PIXELS; i++)
            acc = fmaf(w1[i * HIDDEN + j], x[i], acc);
        hidden[j] = fmaxf(acc, 0.0f);
    }
    __syncthreads();
    if (j < CLASSES) {
        float acc = b2[j];
        for (int i = 0; i < HIDDEN; i++)
            acc = fmaf(w2[i * CLASSES + j], hidden[i], acc);
        logits[blockIdx.x * CLASSES + j] = acc;
    }
}
