// How reductions combine partial results: one definition for the C++ and
// CUDA kernels (embedded into both preludes at build time). Max and Min
// propagate NaN, as ONNX and NumPy do; integer sums and products wrap.
#ifdef __CUDACC__
#define FUSEC_COMBINER_FN static __host__ __device__ __forceinline__
#else
#define FUSEC_COMBINER_FN static inline
#endif

template <typename T> struct FusecLimits;
template <> struct FusecLimits<double> {
  FUSEC_COMBINER_FN double lowest() { return -INFINITY; }
  FUSEC_COMBINER_FN double highest() { return INFINITY; }
};
template <> struct FusecLimits<float> {
  FUSEC_COMBINER_FN float lowest() { return -INFINITY; }
  FUSEC_COMBINER_FN float highest() { return INFINITY; }
};
template <> struct FusecLimits<int8_t> {
  FUSEC_COMBINER_FN int8_t lowest() { return -128; }
  FUSEC_COMBINER_FN int8_t highest() { return 127; }
};
template <> struct FusecLimits<int32_t> {
  FUSEC_COMBINER_FN int32_t lowest() { return -2147483647 - 1; }
  FUSEC_COMBINER_FN int32_t highest() { return 2147483647; }
};
template <> struct FusecLimits<int64_t> {
  FUSEC_COMBINER_FN int64_t lowest() { return -9223372036854775807LL - 1; }
  FUSEC_COMBINER_FN int64_t highest() { return 9223372036854775807LL; }
};
template <> struct FusecLimits<int16_t> {
  FUSEC_COMBINER_FN int16_t lowest() { return -32768; }
  FUSEC_COMBINER_FN int16_t highest() { return 32767; }
};
template <> struct FusecLimits<uint8_t> {
  FUSEC_COMBINER_FN uint8_t lowest() { return 0; }
  FUSEC_COMBINER_FN uint8_t highest() { return 255; }
};
template <> struct FusecLimits<uint16_t> {
  FUSEC_COMBINER_FN uint16_t lowest() { return 0; }
  FUSEC_COMBINER_FN uint16_t highest() { return 65535; }
};
template <> struct FusecLimits<uint32_t> {
  FUSEC_COMBINER_FN uint32_t lowest() { return 0; }
  FUSEC_COMBINER_FN uint32_t highest() { return 4294967295U; }
};
template <> struct FusecLimits<uint64_t> {
  FUSEC_COMBINER_FN uint64_t lowest() { return 0; }
  FUSEC_COMBINER_FN uint64_t highest() { return 18446744073709551615ULL; }
};

// Integer +, - and * wrap: they compute in an unsigned type at least as
// wide as int, whose arithmetic is modular, and narrow back. In the type
// itself a signed overflow, or u16 * u16 (promoted to int), would be
// undefined behaviour, which an optimizer may exploit. Floats compute as
// they are (the overloads below win for them).
template <int Bytes> struct FusecWrappingUnsigned {
  typedef unsigned int type;
};
template <> struct FusecWrappingUnsigned<8> {
  typedef unsigned long long type;
};
template <typename T> FUSEC_COMBINER_FN T fusec_add_wrapping(T a, T b) {
  typedef typename FusecWrappingUnsigned<sizeof(T)>::type U;
  return (T)((U)a + (U)b);
}
template <typename T> FUSEC_COMBINER_FN T fusec_sub_wrapping(T a, T b) {
  typedef typename FusecWrappingUnsigned<sizeof(T)>::type U;
  return (T)((U)a - (U)b);
}
template <typename T> FUSEC_COMBINER_FN T fusec_mul_wrapping(T a, T b) {
  typedef typename FusecWrappingUnsigned<sizeof(T)>::type U;
  return (T)((U)a * (U)b);
}
FUSEC_COMBINER_FN float fusec_add_wrapping(float a, float b) { return a + b; }
FUSEC_COMBINER_FN double fusec_add_wrapping(double a, double b) {
  return a + b;
}
FUSEC_COMBINER_FN float fusec_mul_wrapping(float a, float b) { return a * b; }
FUSEC_COMBINER_FN double fusec_mul_wrapping(double a, double b) {
  return a * b;
}

// -0.0 is the float sum's identity (-0.0 + x is x for every x, +0.0 too),
// so a sum of -0.0 is -0.0 as in NumPy; ints convert it to 0. (An empty
// sum, +0, is folded before codegen.)
template <typename T> struct FusecSum {
  FUSEC_COMBINER_FN T identity() { return T(-0.0); }
  FUSEC_COMBINER_FN T combine(T a, T b) { return fusec_add_wrapping(a, b); }
};
template <typename T> struct FusecProd {
  FUSEC_COMBINER_FN T identity() { return T(1); }
  FUSEC_COMBINER_FN T combine(T a, T b) { return fusec_mul_wrapping(a, b); }
};
// `b != b` is true only for NaN: a NaN on either side wins.
template <typename T> struct FusecMax {
  FUSEC_COMBINER_FN T identity() { return FusecLimits<T>::lowest(); }
  FUSEC_COMBINER_FN T combine(T a, T b) { return (b > a || b != b) ? b : a; }
};
template <typename T> struct FusecMin {
  FUSEC_COMBINER_FN T identity() { return FusecLimits<T>::highest(); }
  FUSEC_COMBINER_FN T combine(T a, T b) { return (b < a || b != b) ? b : a; }
};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// One instruction instead of a compare, a NaN test and a select: reductions
// of 16-bit rows are bound by instruction issue. (It orders -0 below +0,
// where the generic form keeps whichever zero came first.)
template <> struct FusecMax<float> {
  FUSEC_COMBINER_FN float identity() { return -INFINITY; }
  FUSEC_COMBINER_FN float combine(float a, float b) {
    float result;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
  }
};
template <> struct FusecMin<float> {
  FUSEC_COMBINER_FN float identity() { return INFINITY; }
  FUSEC_COMBINER_FN float combine(float a, float b) {
    float result;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
  }
};
#endif

// Online softmax's state: the running max of the values seen and the sum of
// exp(x - max) over them, rescaled whenever the max grows, so one pass over
// a row gives both of softmax's reductions. Every case matches the two
// passes it replaces: -inf values add 0 (exp(-inf - m)), a row of only -inf
// sums to NaN (exp(-inf - -inf)), and a NaN or +inf makes the sum NaN.
template <typename T> struct FusecMaxExpSum {
  T max;
  T sum;
};
template <typename T> FUSEC_COMBINER_FN T fusec_rescale(T from, T to) {
  return from == to ? T(1) : (T)exp(from - to);
}
template <typename T> struct FusecOnlineSoftmax {
  FUSEC_COMBINER_FN FusecMaxExpSum<T> identity() {
    return {FusecLimits<T>::lowest(), T(0)};
  }
  FUSEC_COMBINER_FN FusecMaxExpSum<T> combine(FusecMaxExpSum<T> a,
                                              FusecMaxExpSum<T> b) {
    T max = FusecMax<T>::combine(a.max, b.max);
    return {max, a.sum * fusec_rescale(a.max, max) +
                     b.sum * fusec_rescale(b.max, max)};
  }
  // Adds N values: one rescale for the N, not one per value.
  template <int N>
  FUSEC_COMBINER_FN FusecMaxExpSum<T> add(FusecMaxExpSum<T> state,
                                          const T (&values)[N]) {
    T max = state.max;
    for (int i = 0; i < N; ++i)
      max = FusecMax<T>::combine(max, values[i]);
    T sum = state.sum * fusec_rescale(state.max, max);
    for (int i = 0; i < N; ++i)
      sum += values[i] == FusecLimits<T>::lowest() ? T(0)
                                                   : (T)exp(values[i] - max);
    return {max, sum};
  }
  // The sum of exp(x - max) as the two passes compute it.
  FUSEC_COMBINER_FN T sum(FusecMaxExpSum<T> state) {
    return state.max == FusecLimits<T>::lowest() ? (T)NAN : state.sum;
  }
};
