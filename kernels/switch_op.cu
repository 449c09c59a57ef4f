// A switch on a per-thread opcode: a tiny ALU interpreter. Dense cases may
// become a jump table (brx.idx) or a branch tree, depending on the compiler.
__device__ int apply(int op, int a, int b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a & b;
    case 4: return a | b;
    case 5: return a ^ b;
    case 6: return min(a, b);
    case 9: return a >> (b & 31);
    default: return -1;
    }
}

extern "C" __global__ void switch_op(const int *ops, const int *a, const int *b, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = apply(ops[i], a[i], b[i]);
}
