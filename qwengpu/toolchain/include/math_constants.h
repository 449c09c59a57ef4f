/* <math_constants.h> for qwengpu: CUDA's single-precision constants (CUDART_*_F), with
 * CUDA's values; the bit patterns as __builtin_bit_cast, so they are constant expressions.
 * The double ones (CUDART_PI, ...) are left out: the machine runs 32-bit floats only.
 */
#pragma once
#define CUDART_INF_F __builtin_bit_cast(float, 0x7f800000u)
#define CUDART_NAN_F __builtin_bit_cast(float, 0x7fffffffu)
#define CUDART_MIN_DENORM_F __builtin_bit_cast(float, 0x00000001u)
#define CUDART_MAX_NORMAL_F __builtin_bit_cast(float, 0x7f7fffffu)
#define CUDART_NEG_ZERO_F __builtin_bit_cast(float, 0x80000000u)
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_SQRT_HALF_HI_F 0.707106781f
#define CUDART_SQRT_HALF_LO_F 1.210161749e-08f
#define CUDART_SQRT_TWO_F 1.414213562f
#define CUDART_THIRD_F 0.333333333f
#define CUDART_PIO4_F 0.785398163f
#define CUDART_PIO2_F 1.570796327f
#define CUDART_3PIO4_F 2.356194490f
#define CUDART_2_OVER_PI_F 0.636619772f
#define CUDART_SQRT_2_OVER_PI_F 0.797884561f
#define CUDART_PI_F 3.141592654f
#define CUDART_L2E_F 1.442695041f
#define CUDART_L2T_F 3.321928094f
#define CUDART_LG2_F 0.301029996f
#define CUDART_LGE_F 0.434294482f
#define CUDART_LN2_F 0.693147181f
#define CUDART_LNT_F 2.302585093f
#define CUDART_LNPI_F 1.144729886f
#define CUDART_TWO_TO_M126_F 1.175494351e-38f
#define CUDART_TWO_TO_126_F 8.507059173e37f
#define CUDART_NORM_HUGE_F 3.402823466e38f
#define CUDART_TWO_TO_23_F 8388608.0f
#define CUDART_TWO_TO_24_F 16777216.0f
#define CUDART_TWO_TO_31_F 2147483648.0f
#define CUDART_TWO_TO_32_F 4294967296.0f
#define CUDART_REMQUO_BITS_F 3u
#define CUDART_REMQUO_MASK_F (~((~0u) << CUDART_REMQUO_BITS_F))
#define CUDART_TRIG_PLOSS_F 105615.0f
