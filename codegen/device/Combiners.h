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

template <typename T> struct FusecSum {
  FUSEC_COMBINER_FN T identity() { return T(0); }
  FUSEC_COMBINER_FN T combine(T a, T b) { return (T)(a + b); }
};
template <typename T> struct FusecProd {
  FUSEC_COMBINER_FN T identity() { return T(1); }
  FUSEC_COMBINER_FN T combine(T a, T b) { return (T)(a * b); }
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
