/* <stdio.h> for qwengpu: qwengpu has no device printf; the prelude
 * (qwengpu/toolchain/prelude.h) makes printf a compile error that says so. Write the
 * values to an output array instead.
 */
#pragma once
