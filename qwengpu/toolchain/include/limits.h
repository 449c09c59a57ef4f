/* <limits.h> for qwengpu: CHAR_BIT, INT_MIN/INT_MAX, UINT_MAX, LONG_*, LLONG_*,
 * ULLONG_MAX... are defined by the prelude (qwengpu/toolchain/prelude.h), prepended
 * to every source.
 */
#pragma once
