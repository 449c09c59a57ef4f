// RGB to grayscale, a thread a pixel (3 blocks of 16 over 40): the pixel is packed
// 0x00BBGGRR, each byte converted to float, y = 0.299 r + 0.587 g + 0.114 b (products and
// sums rounded to nearest in that order); the float y, y rounded to a byte
// (__float2uint_rn) and truncated (__float2uint_rz), and a contrast/brightness
// adjustment (y - 128) * contrast + 128 + brightness rounded to nearest by
// __float2uint_rn (negative values saturate to 0) and clamped to 255.
__global__ void fgray(const unsigned *rgb, float *gray, unsigned *luma, unsigned *adjusted, float contrast,
                      float brightness, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned p = rgb[i];
    float r = (float)(p & 0xff), g = (float)((p >> 8) & 0xff), b = (float)((p >> 16) & 0xff);
    float y = 0.299f * r + 0.587f * g + 0.114f * b;
    gray[i] = y;
    luma[2 * i] = __float2uint_rn(y);
    luma[2 * i + 1] = __float2uint_rz(y);
    float a = (y - 128.0f) * contrast + 128.0f + brightness;
    unsigned q = __float2uint_rn(a);
    adjusted[i] = q < 255u ? q : 255u;
}
