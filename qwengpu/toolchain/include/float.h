/* <float.h> for qwengpu: FLT_MAX, FLT_MIN, FLT_EPSILON, FLT_TRUE_MIN, FLT_MANT_DIG, ... are
 * defined by the prelude (qwengpu/toolchain/prelude.h), prepended to every source.
 */
#pragma once
