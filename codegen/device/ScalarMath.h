// Scalar helpers of the elementwise op table (ir/ElementwiseOps.def): one
// definition for the C++ and CUDA kernels, embedded into both preludes at
// build time. An op whose semantics take more than one C expression (ONNX's
// rounding, integer division and remainder rules) calls a helper here.
#ifdef __CUDACC__
#define FUSEC_SCALAR_FN static __host__ __device__ __forceinline__
#else
#define FUSEC_SCALAR_FN static inline
#endif
