/* <stdio.h> for qwengpu: the prelude (qwengpu/toolchain/prelude.h)
 * defines device printf (integer, character, string and pointer arguments); nothing
 * else of the C library exists on the device.
 */
#pragma once
