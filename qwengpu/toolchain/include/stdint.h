/* <stdint.h> for qwengpu: int8_t..uint64_t, intptr_t, intmax_t, the least/fast types,
 * their limits and INT32_C()... are defined by the prelude
 * (qwengpu/toolchain/prelude.h), prepended to every source.
 */
#pragma once
