// Scalar helpers of the elementwise op table (ir/ElementwiseOps.def): one
// definition for the C++ and CUDA kernels, embedded into both preludes at
// build time. An op whose semantics take more than one C expression (ONNX's
// rounding, integer division and remainder rules) calls a helper here.
#ifdef __CUDACC__
#define FUSEC_SCALAR_FN static __host__ __device__ __forceinline__
#else
#define FUSEC_SCALAR_FN static inline
#endif

// Integer division and remainder never trap and give the same results on
// every target: x / 0 and x % 0 are 0, x / -1 is -x (wrapping, so INT_MIN /
// -1 is INT_MIN: the hardware division traps there on x86), x % -1 is 0.
// The division itself always runs on a divisor other than 0 and -1, so no
// compiler may speculate it into a trap. Operands are signed or unsigned
// integers of 8 to 64 bits; for unsigned ones only 0 is special.
template <typename T> FUSEC_SCALAR_FN bool fusec_is_signed() {
  return (T)-1 < (T)0;
}
// (The wrapping arithmetic is in Combiners.h, which every prelude puts
// first.)
template <typename T> FUSEC_SCALAR_FN T fusec_negate_wrapping(T x) {
  return fusec_sub_wrapping((T)0, x);
}
template <typename T> FUSEC_SCALAR_FN bool fusec_is_special_divisor(T b) {
  return b == 0 || (fusec_is_signed<T>() && b == (T)-1);
}
template <typename T> FUSEC_SCALAR_FN T fusec_safe_divisor(T b) {
  return fusec_is_special_divisor(b) ? (T)1 : b;
}
/// div: truncates toward zero.
template <typename T> FUSEC_SCALAR_FN T fusec_idiv(T a, T b) {
  const T q = (T)(a / fusec_safe_divisor(b));
  return b == 0                               ? (T)0
         : fusec_is_signed<T>() && b == (T)-1 ? fusec_negate_wrapping(a)
                                              : q;
}
/// fmod: the remainder with the dividend's sign (C's %).
template <typename T> FUSEC_SCALAR_FN T fusec_irem(T a, T b) {
  const T r = (T)(a % fusec_safe_divisor(b));
  return fusec_is_special_divisor(b) ? (T)0 : r;
}
/// mod: the remainder with the divisor's sign (Python's and NumPy's %).
template <typename T> FUSEC_SCALAR_FN T fusec_imod(T a, T b) {
  const T r = fusec_irem(a, b);
  return (fusec_is_signed<T>() && r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b)
                                                                  : r;
}

/// Float mod with the divisor's sign, as NumPy computes it: fmod, moved
/// into the divisor's sign; a zero result is a zero of the divisor's sign.
template <typename T> FUSEC_SCALAR_FN T fusec_floor_mod(T a, T b) {
  const T r = fmod(a, b);
  if (r == 0)
    return copysign((T)0, b);
  return ((r < 0) != (b < 0)) ? (T)(r + b) : r;
}

/// Integer powers, exact and wrapping (square and multiply in 64 bits; the
/// low bits are the narrower dtype's wrapped result). A negative exponent
/// gives 1 / a^-b truncated: 1 for a = 1, -1 or 1 for a = -1, else 0.
template <typename T> FUSEC_SCALAR_FN T fusec_ipow(T a, T b) {
  if (fusec_is_signed<T>() && b < (T)0)
    return a == 1 ? (T)1 : a == (T)-1 ? ((b & 1) ? (T)-1 : (T)1) : (T)0;
  unsigned long long base = (unsigned long long)(long long)a, result = 1;
  for (unsigned long long e = (unsigned long long)(long long)b; e; e >>= 1) {
    if (e & 1)
      result *= base;
    base *= base;
  }
  return (T)(long long)result;
}

/// Shifts (ONNX BitShift) in 64 bits, wrapped to T: amounts outside
/// [0, 64) shift everything out, as the op table's reference does.
template <typename T> FUSEC_SCALAR_FN T fusec_shift_left(T a, T b) {
  if (b < (T)0 || b >= (T)64)
    return (T)0;
  return (T)((unsigned long long)(long long)a << (int)b);
}
template <typename T> FUSEC_SCALAR_FN T fusec_shift_right(T a, T b) {
  const bool negative = fusec_is_signed<T>() && a < (T)0;
  if (b < (T)0 || b >= (T)64)
    return negative ? (T)-1 : (T)0;
  if (fusec_is_signed<T>())
    return (T)((long long)a >> (int)b);
  return (T)((unsigned long long)a >> (int)b);
}

/// ONNX HardSwish: x * HardSigmoid(x) with alpha = 1/6 and beta = 1/2, as
/// the op's function body defines it: alpha is a float attribute, so every
/// dtype multiplies by float(1/6) rather than dividing by 6. NaN stays NaN.
template <typename T> FUSEC_SCALAR_FN T fusec_hard_swish(T x) {
  T t = x * (T)(1.0f / 6.0f) + (T)0.5;
  t = t < (T)0 ? (T)0 : t;
  t = t > (T)1 ? (T)1 : t;
  return x * t;
}

/// softplus: log(1 + exp(x)) without overflow; mish: x * tanh(softplus(x)).
template <typename T> FUSEC_SCALAR_FN T fusec_softplus(T x) {
  return (x > (T)0 ? x : (T)0) + log1p(exp(-fabs(x)));
}
template <typename T> FUSEC_SCALAR_FN T fusec_mish(T x) {
  return x * tanh(fusec_softplus(x));
}

// BitCast: the bits of a `From` read as a `To` of the same size (a copy of
// the bytes is the defined way in C++ and CUDA, where NVRTC has no memcpy
// builtin; compilers make it a move).
template <typename To, typename From>
FUSEC_SCALAR_FN To fusec_bit_cast(From value) {
  static_assert(sizeof(To) == sizeof(From), "a bit_cast keeps the size");
  To result;
  const unsigned char *source = (const unsigned char *)&value;
  unsigned char *target = (unsigned char *)&result;
  for (unsigned i = 0; i < sizeof(To); ++i)
    target[i] = source[i];
  return result;
}

// Float to integer conversion (cast): truncates toward zero, saturates to
// the integer dtype's range, and NaN becomes 0 — the same on every target
// (C leaves out-of-range conversions undefined; x86 and CUDA differ).
template <typename I, typename F>
FUSEC_SCALAR_FN I fusec_float_to_int(F value) {
  if (value != value)
    return (I)0;
  if (!fusec_is_signed<I>()) {
    // [0, 2^n - 1]: 2^n - 1 converts to F as 2^n where F has fewer bits,
    // and a value at or above it saturates either way.
    if (value <= (F)0)
      return (I)0;
    if (value >= (F)FusecLimits<I>::highest())
      return FusecLimits<I>::highest();
    return (I)value;
  }
  // Both bounds are powers of two (-2^(n-1) and 2^(n-1)), exact in F.
  if (value <= (F)FusecLimits<I>::lowest())
    return FusecLimits<I>::lowest();
  if (value >= -(F)FusecLimits<I>::lowest())
    return FusecLimits<I>::highest();
  return (I)value;
}
