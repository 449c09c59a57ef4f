/* <stdio.h> for qwengpu: the prelude (qwengpu/toolchain/prelude.h)
 * defines device printf (integer, character, string, pointer and float arguments (a double is refused: the machine computes in fp32)); nothing
 * else of the C library exists on the device.
 */
#pragma once
