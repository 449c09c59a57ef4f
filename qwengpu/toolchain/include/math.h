/* <math.h> for qwengpu: the single-precision math functions (expf, sqrtf, ...; CUDA's
 * float overloads exp(float), sqrt(float), ...; std::), isnan/isinf/isfinite/signbit,
 * INFINITY, NAN, HUGE_VALF and M_PI & co. are defined by the prelude
 * (qwengpu/toolchain/prelude.h), prepended to every source. The machine runs 32-bit
 * floats only: the double versions are a compile error under clang.
 */
#pragma once
