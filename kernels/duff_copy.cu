// Duff's device: a copy loop unrolled by four whose first pass jumps into
// the middle of the body through a switch. The loop has several entry
// points (irreducible control flow), and each thread copies a different
// length, so the lanes enter at different places and leave at different
// times.
extern "C" __global__ void duff_copy(const int *src, int *dst, const int *len, int stride)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int *from = src + t * stride;
    int *to = dst + t * stride;
    int count = len[t];
    if (count <= 0)
        return;
    int rounds = (count + 3) / 4;
    switch (count % 4) {
    case 0: do { *to++ = *from++ + 1;
    case 3:      *to++ = *from++ + 1;
    case 2:      *to++ = *from++ + 1;
    case 1:      *to++ = *from++ + 1;
            } while (--rounds > 0);
    }
}
