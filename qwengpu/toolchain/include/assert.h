/* <assert.h> for qwengpu: no include guard, as the standard says: each inclusion
 * re-defines assert by the current NDEBUG. With NDEBUG, assert(e) is ((void)0),
 * as in CUDA; without it, a failed assert prints CUDA's message, ends its thread
 * and fails the launch (see the prelude, qwengpu/toolchain/prelude.h). */
#ifdef assert
#undef assert
#endif
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) __qg_assert(e, #e)    /* #e here: the text as written, threadIdx.x not its expansion */
#endif
