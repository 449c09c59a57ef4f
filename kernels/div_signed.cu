// Signed division and remainder by a runtime divisor. C++ truncates toward
// zero and the remainder takes the dividend's sign. x/0 and INT_MIN/-1 are
// undefined in C++; this machine defines them (see the .py).
extern "C" __global__ void div_signed(const int *a, const int *b, int *quot, int *rem, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i], d = b[i];
        quot[i] = x / d;
        rem[i] = x % d;
    }
}
