// 8- and 16-bit arrays in memory: one thread per pixel byte. Neighbouring
// threads write neighbouring bytes of the same 32-bit word at once, so each
// narrow store must leave the other bytes of its word intact.
extern "C" __global__ void byte_pixels(const unsigned char *img, unsigned char *bright,
                                       signed char *centred, short *scaled, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int p = img[i];                             // zero-extended byte
        bright[i] = min(p + 40, 255);               // saturating brighten
        centred[i] = (signed char)(p - 128);        // -128..127
        scaled[i] = (short)(p * 300 - 20000);       // wraps in 16 bits above p = 175
    }
}
