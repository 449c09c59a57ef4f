// atomicSub: withdrawals drawn from four accounts (account = i % 4), once as
// signed balances that go negative and once as unsigned balances that wrap.
__global__ void atomic_sub(const int *amount, int *balance, unsigned *ubalance, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicSub(&balance[i % 4], amount[i]);
        atomicSub(&ubalance[i % 4], (unsigned)amount[i]);
    }
}
