// __activemask inside divergent code: threads past n leave first; then the
// odd and even values take different sides of a branch, and each side sees
// only its own lanes. Bits 0-3: the lanes on this thread's side (even side
// shifted to bits 4-7); bits 8-11: the lanes still running after the branch.
extern "C" __global__ void vote_activemask(const int *in, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned side;
    if (in[i] & 1)
        side = __activemask();
    else
        side = __activemask() << 4;
    out[i] = side | (__activemask() << 8);
}
