/* <stdlib.h> for qwengpu: abs/labs/llabs and min/max are defined by the prelude
 * (qwengpu/toolchain/prelude.h); there is no device malloc.
 */
#pragma once
