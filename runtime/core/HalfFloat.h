/*===- HalfFloat.h - f16 and bf16 conversions -------------------*- C -*-===//
 *
 * Used by the runtime and embedded verbatim into every generated C++ kernel
 * that touches f16 or bf16, so host and kernels convert identically (CUDA
 * kernels use the hardware's cvt instructions, which round the same way).
 * Keep it self-contained C (kernels compile it with no include path).
 * Conversions to 16-bit round to nearest even; NaN stays NaN, the upper
 * bits of its payload kept (as NumPy's f16 conversion keeps them), so a
 * stored NaN's bits survive a load and a store (BitCast).
 *
 *===---------------------------------------------------------------------===*/
#ifndef FUSEC_HALF_FLOAT_H
#define FUSEC_HALF_FLOAT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float fusec_bits_to_f32(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

static inline uint32_t fusec_f32_to_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static inline float fusec_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) /* inf or nan */
    return fusec_bits_to_f32(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) /* normal: rebias 15 -> 127 */
    return fusec_bits_to_f32(sign | ((exponent + 112) << 23) |
                             (mantissa << 13));
  /* zero or subnormal: mantissa * 2^-24, exact in f32 */
  float magnitude = (float)mantissa * 5.9604644775390625e-08f;
  return fusec_bits_to_f32(sign | fusec_f32_to_bits(magnitude));
}

static inline uint16_t fusec_f32_to_f16(float value) {
  uint32_t bits = fusec_f32_to_bits(value);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) { /* nan: its payload's upper bits, as NumPy */
    uint16_t payload = (uint16_t)((magnitude >> 13) & 0x3ffu);
    return (uint16_t)(sign | 0x7c00u | (payload ? payload : 1u));
  }
  if (magnitude >= 0x47800000u) /* >= 65536: inf */
    return (uint16_t)(sign | 0x7c00u);
  if (magnitude < 0x38800000u) /* below 2^-14: subnormal or zero */
    return (uint16_t)(sign | (uint16_t)nearbyintf(fusec_bits_to_f32(magnitude) *
                                                  16777216.0f));
  uint32_t half =
      (((magnitude >> 23) - 112) << 10) | ((magnitude >> 13) & 0x3ffu);
  uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; /* may carry into the exponent, up to inf: still correct */
  return (uint16_t)(sign | half);
}

static inline float fusec_bf16_to_f32(uint16_t h) {
  return fusec_bits_to_f32((uint32_t)h << 16);
}

static inline uint16_t fusec_f32_to_bf16(float value) {
  uint32_t bits = fusec_f32_to_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) { /* nan: its payload's upper bits */
    uint16_t upper = (uint16_t)(bits >> 16);
    return (uint16_t)((upper & 0x7fu) ? upper : upper | 0x40u);
  }
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

/* An f32 value rounded to f16 or bf16 and widened back: what a kernel
 * holds for an op's result on an f16/bf16 tensor. */
static inline float fusec_round_to_f16(float value) {
  return fusec_f16_to_f32(fusec_f32_to_f16(value));
}
static inline float fusec_round_to_bf16(float value) {
  return fusec_bf16_to_f32(fusec_f32_to_bf16(value));
}

/* f64 to f32 rounded to odd: truncated, with the last bit set when
 * anything was cut off. Rounding that to f16 or bf16 (to nearest even) is
 * the correctly rounded f64 -> f16/bf16 conversion, with no double-rounding
 * error: f32 keeps more than two bits beyond either format. */
static inline float fusec_f64_to_f32_round_odd(double value) {
  float rounded = (float)value;
  if (value != value || (double)rounded == value)
    return rounded; /* nan, or exact */
  uint32_t bits = fusec_f32_to_bits(rounded);
  if (fabs((double)rounded) > fabs(value))
    --bits; /* rounded away from zero (up to inf): step back toward it */
  return fusec_bits_to_f32(bits | 1u);
}

static inline uint16_t fusec_f64_to_f16(double value) {
  return fusec_f32_to_f16(fusec_f64_to_f32_round_odd(value));
}

static inline uint16_t fusec_f64_to_bf16(double value) {
  return fusec_f32_to_bf16(fusec_f64_to_f32_round_odd(value));
}

#endif /* FUSEC_HALF_FLOAT_H */
