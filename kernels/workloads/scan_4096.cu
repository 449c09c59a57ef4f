// Inclusive prefix sum of 4,096 int32s in one launch (a chained, "single-pass" scan):
// out[i] = in[0] + ... + in[i], wrapping modulo 2^32. 64 blocks of 16 threads, each
// scanning one 64-element chunk in shared memory: every thread scans 4 consecutive
// elements, a Hillis-Steele scan over the 16 thread totals gives each thread its
// offset, and thread 0 adds the carry of all earlier chunks.
// The carry is chained through global memory: a block takes its chunk number from an
// atomic ticket (so chunks are numbered in the order blocks start, and chunk c-1 is
// always held by a block that started earlier), waits until chunk c-1 has published
// its inclusive prefix (chunk_ready[c-1] != 0), publishes its own
// chunk_prefix[c] = chunk_prefix[c-1] + its total behind a __threadfence, then sets
// chunk_ready[c]. Outputs: out (the scan), chunk_prefix (the scan's value at the end of
// every chunk), chunk_ready (all 1) and *ticket (64); the host zeroes chunk_ready and
// *ticket before a launch. On a machine that runs blocks one after another, the wait
// never spins.
#define CHUNK 64
#define THREADS 16
#define PER_THREAD (CHUNK / THREADS)

__global__ void scan_4096(const int *in, int *out, volatile int *chunk_prefix,
                          volatile int *chunk_ready, unsigned *ticket)
{
    __shared__ int s[CHUNK];
    __shared__ int totals[2][THREADS];
    __shared__ unsigned chunk;
    __shared__ int carry;
    unsigned tid = threadIdx.x;
    if (tid == 0)
        chunk = atomicAdd(ticket, 1u);
    __syncthreads();
    const unsigned base = chunk * CHUNK;
#pragma unroll
    for (int j = 0; j < PER_THREAD; j++)          // coalesced: consecutive threads, consecutive words
        s[j * THREADS + tid] = in[base + j * THREADS + tid];
    __syncthreads();

    int *mine = s + tid * PER_THREAD;               // this thread's 4 consecutive elements
    int acc = 0;
#pragma unroll
    for (int j = 0; j < PER_THREAD; j++) {
        acc += mine[j];
        mine[j] = acc;
    }
    int cur = 0;
    totals[0][tid] = acc;
    __syncthreads();
#pragma unroll 1
    for (unsigned offset = 1; offset < THREADS; offset *= 2) {
        int v = totals[cur][tid];
        if (tid >= offset)
            v += totals[cur][tid - offset];
        cur ^= 1;
        totals[cur][tid] = v;
        __syncthreads();
    }

    if (tid == 0) {
        int prev = 0;
        if (chunk > 0) {
            while (chunk_ready[chunk - 1] == 0)
                ;                                   // chunk - 1 is still being scanned
            __threadfence();
            prev = chunk_prefix[chunk - 1];
        }
        chunk_prefix[chunk] = prev + totals[cur][THREADS - 1];
        __threadfence();
        chunk_ready[chunk] = 1;
        carry = prev;
    }
    __syncthreads();
    int add = carry + totals[cur][tid] - acc;       // all earlier chunks and earlier threads
#pragma unroll
    for (int j = 0; j < PER_THREAD; j++)
        mine[j] += add;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < PER_THREAD; j++)
        out[base + j * THREADS + tid] = s[j * THREADS + tid];
}
