// In the style of the CUDA sample simpleAtomicIntrinsics: every thread of the
// grid applies each atomic to its own word. Where the sample's result would
// depend on thread order (atomicExch of tid, a CAS chain), the operands are
// chosen so the final memory is the same in every schedule.
extern "C" __global__ void simple_atomic_intrinsics(unsigned *g)
{
    unsigned tid = blockDim.x * blockIdx.x + threadIdx.x;
    unsigned threads = blockDim.x * gridDim.x;

    atomicAdd(&g[0], 10u);
    atomicExch(&g[1], threads);         // every thread stores the same value
    atomicMax(&g[2], tid);
    atomicMin(&g[3], tid);
    atomicInc(&g[4], 17u);              // counts modulo 18
    atomicDec(&g[5], 137u);             // counts down modulo 138
    atomicCAS(&g[6], 0u, 42u);          // only the first thread finds 0
    atomicAnd(&g[7], 2 * tid + 7);
    atomicOr(&g[8], 1u << (tid & 31));
    atomicXor(&g[9], tid * 2654435761u);  // Knuth hash: distinct bits per thread
}
