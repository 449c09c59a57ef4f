/* <stddef.h> for qwengpu: size_t, ptrdiff_t and std::nullptr_t are defined by the
 * prelude (qwengpu/toolchain/prelude.h), prepended to every source.
 */
#pragma once
