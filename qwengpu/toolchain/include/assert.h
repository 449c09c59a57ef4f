/* <assert.h> for qwengpu: no include guard, as the standard says: each inclusion
 * re-defines assert by the current NDEBUG. With NDEBUG, assert(e) is ((void)0),
 * as in CUDA; without it, assert is a compile error (the machine cannot trap or
 * report a failed assertion; see the prelude, qwengpu/toolchain/prelude.h). */
#ifdef assert
#undef assert
#endif
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) __qg_assert((e))
#endif
