/* <vector_types.h> for qwengpu: the device side of CUDA (qualifiers, threadIdx...,
 * vector types, atomics, warp functions, integer intrinsics) is the prelude
 * (qwengpu/toolchain/prelude.h), prepended to every source. Sources are device code
 * only: the host side (cudaMalloc, <<<>>> launches) is the Python API.
 */
#pragma once
