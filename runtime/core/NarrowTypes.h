/*===- NarrowTypes.h - 8-, 4- and 2-bit dtype conversions -------*- C -*-===//
 *
 * The float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ) and float4 (E2M1) formats
 * and the 4- and 2-bit integers. Each element is stored in a byte of its
 * own (the ONNX reader unpacks packed 4- and 2-bit data) and computed as a
 * float or an int8/uint8. Used by the runtime and embedded verbatim into
 * every generated kernel (C++ and CUDA), so all of them convert
 * identically. Keep it self-contained C with no library calls.
 *
 * Conversions to a narrow float round to nearest even, as ONNX's Cast
 * defines them; out of range they saturate to the largest finite value or,
 * with saturation off, give the format's NaN (FN, FNUZ) or infinity (E5M2).
 * FNUZ formats have no negative zero (it becomes +0) and one NaN, 0x80.
 *
 *===---------------------------------------------------------------------===*/
#ifndef FUSEC_NARROW_TYPES_H
#define FUSEC_NARROW_TYPES_H

#ifdef __CUDACC__
#define FUSEC_NARROW_FN static __host__ __device__ __forceinline__
#else
#include <stdint.h>
#define FUSEC_NARROW_FN static inline
#endif

/* The bits of an f32 and back (a union: plain C on every compiler here). */
typedef union {
  float value;
  uint32_t bits;
} fusec_narrow_pun;
FUSEC_NARROW_FN uint32_t fusec_narrow_bits(float value) {
  fusec_narrow_pun pun;
  pun.value = value;
  return pun.bits;
}
FUSEC_NARROW_FN float fusec_narrow_float(uint32_t bits) {
  fusec_narrow_pun pun;
  pun.bits = bits;
  return pun.value;
}

/* The magnitude of a finite f32 (its bits without the sign) rounded to
 * nearest even onto a format of `mantissa` fraction bits and exponent bias
 * `bias`: the format's code without its sign bit. Values past the format's
 * range give codes past its largest; the caller decides what they mean. */
FUSEC_NARROW_FN uint32_t fusec_narrow_round(uint32_t magnitude, int mantissa,
                                            int bias) {
  int exponent = (int)(magnitude >> 23) - 127;
  uint32_t significand = magnitude & 0x7fffffu;
  if (magnitude < 0x800000u)
    exponent = -126; /* an f32 subnormal: no implicit bit */
  else
    significand |= 0x800000u;
  const int minExponent = 1 - bias; /* of the format's normal numbers */
  int shift = 23 - mantissa;
  if (exponent < minExponent)
    shift += minExponent - exponent; /* a subnormal of the format */
  if (shift > 24)
    return 0; /* below half the smallest subnormal */
  uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u)))
    ++kept; /* may carry into the exponent: still the right code */
  if (exponent < minExponent)
    return kept;
  /* kept holds the implicit bit, which adds the exponent's last step. */
  return ((uint32_t)(exponent - minExponent) << mantissa) + kept;
}

/* A float8 code of the format (mantissa, bias, largest finite code; fnuz:
 * NaN is 0x80 and there is no -0; hasInf: E5M2's IEEE-like inf and NaNs). */
FUSEC_NARROW_FN uint8_t fusec_f32_to_f8(float value, int mantissa, int bias,
                                        uint32_t maxCode, int fnuz, int hasInf,
                                        int saturate) {
  const uint32_t bits = fusec_narrow_bits(value);
  const uint32_t sign = (bits >> 24) & 0x80u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) { /* NaN: E5M2 keeps its payload's top bits */
    const uint32_t payload = (magnitude >> 21) & 3u;
    return (uint8_t)(fnuz     ? 0x80u
                     : hasInf ? sign | 0x7cu | (payload ? payload : 2u)
                              : sign | 0x7fu);
  }
  uint32_t code = magnitude == 0x7f800000u
                      ? 0xffffu
                      : fusec_narrow_round(magnitude, mantissa, bias);
  if (code > maxCode) {
    if (!saturate)
      return (uint8_t)(fnuz ? 0x80u : sign | (hasInf ? 0x7cu : 0x7fu));
    code = maxCode;
  }
  if (fnuz && code == 0)
    return 0;
  return (uint8_t)(sign | code);
}

FUSEC_NARROW_FN float fusec_f8_to_f32(uint8_t code, int mantissa, int bias,
                                      int fnuz, int hasInf) {
  const uint32_t sign = (uint32_t)(code & 0x80u) << 24;
  const uint32_t magnitude = code & 0x7fu;
  if (fnuz ? code == 0x80u : (hasInf ? magnitude > 0x7cu : magnitude == 0x7fu))
    return fusec_narrow_float(
        (fnuz ? 0u : sign) |
        (hasInf ? 0x7f800000u | ((magnitude & 3u) << 21) : 0x7fc00000u));
  if (hasInf && magnitude == 0x7cu)
    return fusec_narrow_float(sign | 0x7f800000u);
  const uint32_t exponent = magnitude >> mantissa;
  const uint32_t fraction = magnitude & ((1u << mantissa) - 1u);
  if (exponent == 0) {
    /* fraction * 2^(1 - bias - mantissa), exact */
    const float unit =
        fusec_narrow_float((uint32_t)(127 + 1 - bias - mantissa) << 23);
    return fusec_narrow_float(sign | fusec_narrow_bits((float)fraction * unit));
  }
  return fusec_narrow_float(sign | ((exponent + 127u - (uint32_t)bias) << 23) |
                            (fraction << (23 - mantissa)));
}

#define FUSEC_FLOAT8(name, mantissa, bias, maxCode, fnuz, hasInf)              \
  FUSEC_NARROW_FN uint8_t fusec_f32_to_##name(float value, int saturate) {     \
    return fusec_f32_to_f8(value, mantissa, bias, maxCode, fnuz, hasInf,       \
                           saturate);                                          \
  }                                                                            \
  FUSEC_NARROW_FN float fusec_##name##_to_f32(uint8_t code) {                  \
    return fusec_f8_to_f32(code, mantissa, bias, fnuz, hasInf);                \
  }                                                                            \
  FUSEC_NARROW_FN float fusec_round_to_##name(float value, int saturate) {     \
    return fusec_##name##_to_f32(fusec_f32_to_##name(value, saturate));        \
  }
FUSEC_FLOAT8(f8e4m3fn, 3, 7, 0x7eu, 0, 0)
FUSEC_FLOAT8(f8e4m3fnuz, 3, 8, 0x7fu, 1, 0)
FUSEC_FLOAT8(f8e5m2, 2, 15, 0x7bu, 0, 1)
FUSEC_FLOAT8(f8e5m2fnuz, 2, 16, 0x7fu, 1, 0)
#undef FUSEC_FLOAT8

/* float4 E2M1: a sign bit (0x8) over 2 exponent and 1 fraction bits, no
 * infinity or NaN: out of range saturates to 6 whatever `saturate` says
 * (ONNX: the attribute applies to float8 only), and NaN becomes a zero of
 * the opposite sign (NaN -0, -NaN +0), as in ONNX's reference (ml_dtypes). */
FUSEC_NARROW_FN uint8_t fusec_f32_to_f4e2m1fn(float value, int saturate) {
  (void)saturate;
  const uint32_t bits = fusec_narrow_bits(value);
  const uint32_t sign = (bits >> 28) & 0x8u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return sign ^ 0x8u;
  uint32_t code =
      magnitude == 0x7f800000u ? 0x7u : fusec_narrow_round(magnitude, 1, 1);
  return (uint8_t)(sign | (code > 0x7u ? 0x7u : code));
}
FUSEC_NARROW_FN float fusec_f4e2m1fn_to_f32(uint8_t code) {
  /* 0, 0.5, 1, 1.5, 2, 3, 4, 6 */
  const uint32_t magnitude = code & 0x7u;
  const float value = magnitude < 2u
                          ? 0.5f * (float)magnitude
                          : fusec_narrow_float(((magnitude >> 1) + 126u) << 23 |
                                               (magnitude & 1u) << 22);
  return (code & 0x8u) ? -value : value;
}
FUSEC_NARROW_FN float fusec_round_to_f4e2m1fn(float value, int saturate) {
  return fusec_f4e2m1fn_to_f32(fusec_f32_to_f4e2m1fn(value, saturate));
}

/* float8 E8M0 (the MX formats' scale): a power of two 2^(code - 127), no
 * sign, 0xFF is NaN. ONNX's Cast reads |x|'s exponent and rounds by
 * `roundMode` (0 up, the default; 1 down; 2 to nearest), saturating at
 * 2^127 unless `saturate` is 0, as its reference does (numpy_helper's
 * to_float8e8m0). */
FUSEC_NARROW_FN uint8_t fusec_f32_to_f8e8m0fnu_rounded(float value,
                                                       int saturate,
                                                       int roundMode) {
  const uint32_t bits = fusec_narrow_bits(value);
  uint32_t exponent = (bits >> 23) & 0xffu;
  if (exponent == 0xffu)
    return 0xffu;
  int roundUp = 0;
  if (roundMode == 0) {
    roundUp = (bits & 0x7fffffu) != 0;
  } else if (roundMode == 2) {
    const int guard = (bits & 0x400000u) != 0, round = (bits & 0x200000u) != 0;
    const int sticky = (bits & 0x1fffffu) != 0, lsb = exponent > 0;
    roundUp = guard && (round || sticky || lsb);
  }
  if (saturate && exponent == 0xfeu)
    roundUp = 0;
  return (uint8_t)(exponent + (uint32_t)roundUp);
}
FUSEC_NARROW_FN uint8_t fusec_f32_to_f8e8m0fnu(float value, int saturate) {
  return fusec_f32_to_f8e8m0fnu_rounded(value, saturate, 0);
}
FUSEC_NARROW_FN float fusec_f8e8m0fnu_to_f32(uint8_t code) {
  if (code == 0xffu)
    return fusec_narrow_float(0x7fc00000u);
  if (code == 0)
    return fusec_narrow_float(0x400000u); /* 2^-127, an f32 subnormal */
  return fusec_narrow_float((uint32_t)code << 23);
}
FUSEC_NARROW_FN float fusec_round_to_f8e8m0fnu(float value, int saturate) {
  return fusec_f8e8m0fnu_to_f32(fusec_f32_to_f8e8m0fnu(value, saturate));
}
FUSEC_NARROW_FN float fusec_round_to_f8e8m0fnu_by(float value, int saturate,
                                                  int roundMode) {
  return fusec_f8e8m0fnu_to_f32(
      fusec_f32_to_f8e8m0fnu_rounded(value, saturate, roundMode));
}

/* The 4- and 2-bit integers: the low `bits` of an integer, two's
 * complement for the signed ones (a wider integer wraps into them). */
FUSEC_NARROW_FN int8_t fusec_wrap_signed(int64_t value, int bits) {
  const uint64_t sign = 1ull << (bits - 1);
  const int64_t low = (int64_t)(((uint64_t)value & ((sign << 1) - 1u)) ^ sign);
  return (int8_t)(low - (int64_t)sign);
}
FUSEC_NARROW_FN uint8_t fusec_wrap_unsigned(int64_t value, int bits) {
  return (uint8_t)((uint64_t)value & ((1ull << bits) - 1u));
}

/* BitCast's view of an f16 or bf16 value held in f32 (a stored one,
 * widened exactly): its 16 bits, with a NaN's payload kept (the
 * conversions proper give one quiet NaN, as arithmetic may). E5M2's code
 * is the upper byte of the f16 bits. */
FUSEC_NARROW_FN uint16_t fusec_f16_bits(float value) {
  uint32_t bits = fusec_narrow_bits(value);
  uint32_t magnitude = bits & 0x7fffffffu;
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  if (magnitude > 0x7f800000u) { /* nan: the payload's upper 10 bits */
    uint16_t payload = (uint16_t)((magnitude >> 13) & 0x3ffu);
    return (uint16_t)(sign | 0x7c00u | (payload ? payload : 1u));
  }
  if (magnitude >= 0x7f800000u) /* inf */
    return (uint16_t)(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) /* normal: rebias 127 -> 15 */
    return (uint16_t)(sign | (((magnitude >> 23) - 112) << 10) |
                      ((magnitude >> 13) & 0x3ffu));
  /* zero or subnormal: an integer number of 2^-24 */
  return (uint16_t)(sign |
                    (uint16_t)(fusec_narrow_float(magnitude) * 16777216.0f));
}
FUSEC_NARROW_FN uint16_t fusec_bf16_bits(float value) {
  return (uint16_t)(fusec_narrow_bits(value) >> 16);
}

#endif /* FUSEC_NARROW_TYPES_H */
