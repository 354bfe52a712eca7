#include "runtime/cpu/OpenBlas.h"

#include "runtime/core/DynamicLibrary.h"
#include "runtime/core/Error.h"
#include "runtime/core/HalfFloat.h"

#include <algorithm>
#include <climits>
#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fusec::openblas {

namespace {
/// The threads a call is split across.
int maxThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
} // namespace

namespace {

const dynlib::LoadedLibrary<Api> &loaded() {
  static const dynlib::LoadedLibrary<Api> library = [] {
    dynlib::LoadedLibrary<Api> loaded = dynlib::loadLibrary<Api>(
        {"libopenblas.so.0", "libopenblas.so"}, "OpenBLAS (libopenblas.so.0)",
        " (Debian's package libopenblas0)",
        [](void *library, Api &api, std::string &missing) {
          std::string optional;
#define FUSEC_RESOLVE_OPENBLAS(name, result, parameters)                       \
  dynlib::resolve(library, api.name, #name, false, missing);
#define FUSEC_RESOLVE_OPENBLAS_OPTIONAL(name, result, parameters)              \
  dynlib::resolve(library, api.name, #name, false, optional);
          FUSEC_OPENBLAS_ENTRY_POINTS(FUSEC_RESOLVE_OPENBLAS)
          FUSEC_OPENBLAS_OPTIONAL_ENTRY_POINTS(FUSEC_RESOLVE_OPENBLAS_OPTIONAL)
#undef FUSEC_RESOLVE_OPENBLAS_OPTIONAL
#undef FUSEC_RESOLVE_OPENBLAS
        });
    // fusec splits each call across OpenMP's threads itself (gemmBatches):
    // OpenBLAS's own thread pool would compete for the cores with the
    // OpenMP threads the kernels use, which spin for a while after every
    // kernel (measured on 16 cores: a d=256 GPT-2 took 16 ms, 12x ONNX
    // Runtime).
    if (loaded.error.empty() && loaded.api.openblas_set_num_threads)
      loaded.api.openblas_set_num_threads(1);
    return loaded;
  }();
  return library;
}

template <typename From, typename To>
void convert(const void *source, void *target, size_t count,
             To (*convertOne)(From)) {
  const From *from = static_cast<const From *>(source);
  To *to = static_cast<To *>(target);
  for (size_t i = 0; i < count; ++i)
    to[i] = convertOne(from[i]);
}

void toF32(DType dtype, const void *source, float *target, size_t count) {
  convert(source, target, count,
          dtype == DType::F16 ? fusec_f16_to_f32 : fusec_bf16_to_f32);
}

void fromF32(DType dtype, const float *source, void *target, size_t count) {
  convert(source, target, count,
          dtype == DType::F16 ? fusec_f32_to_f16 : fusec_f32_to_bf16);
}

} // namespace

std::string unavailableReason() { return loaded().error; }

const Api &api() {
  return loaded().get("fusec: matmuls on the CPU target need OpenBLAS: ");
}

int threads() {
  api(); // the threads exist only where OpenBLAS does
  return maxThreads();
}

HostMatmul::HostMatmul(const MatmulCall &call, size_t step, Scratch &scratch)
    : call(call), what(matmulStepName(call, step)) {
  if (call.bias >= 0 || call.epilogue != Epilogue::None)
    throw Error("fusec: " + what + " has " +
                (call.bias >= 0
                     ? std::string("a bias")
                     : std::string("epilogue ") + epilogueName(call.epilogue)) +
                ": bias and activation epilogues run only on the CUDA target");
  if (call.dtype != DType::F32 && call.dtype != DType::F64 &&
      call.dtype != DType::F16 && call.dtype != DType::BF16)
    throw Error("fusec: internal error: " + what + ": no matmul on " +
                dtypeName(call.dtype));
  if (call.batch * call.m * call.n == 0 || call.k == 0)
    return;
  for (int64_t size : {call.m, call.n, call.k})
    if (size > INT_MAX)
      throw Error("fusec: " + what +
                  ": a dimension exceeds OpenBLAS's 32-bit sizes");
  api();
  extentA = static_cast<size_t>(matmulExtentA(call));
  extentB = static_cast<size_t>(matmulExtentB(call));
  if (call.dtype == DType::F16 || call.dtype == DType::BF16) {
    size_t extentC = static_cast<size_t>(call.batch * call.m * call.n);
    if (scratch.a.size() < extentA)
      scratch.a.resize(extentA);
    if (scratch.b.size() < extentB)
      scratch.b.resize(extentB);
    if (scratch.c.size() < extentC)
      scratch.c.resize(extentC);
  }
}

namespace {

/// Multiply-adds below which a call runs on one thread: starting the team
/// costs more than it saves.
constexpr int64_t kParallelMultiplyAdds = int64_t(1) << 20;
/// The smallest slice of rows or columns one thread takes.
constexpr int64_t kMinSlice = 16;

/// Every batch of one gemm (`gemm` is cblas_sgemm or cblas_dgemm), split
/// into slices of the longer of M and N across OpenMP's threads, each slice
/// a single-threaded BLAS call: one thread pool for kernels and BLAS.
template <typename T, typename Gemm>
void gemmBatches(Gemm gemm, const MatmulCall &call, const T *a, const T *b,
                 T *c) {
  const int64_t m = call.m, n = call.n, k = call.k;
  const bool splitRows = m >= n;
  const int64_t extent = splitRows ? m : n;
  int64_t slices = 1;
  if (call.batch * m * n * k >= kParallelMultiplyAdds)
    slices = std::max<int64_t>(
        1, std::min<int64_t>(maxThreads(), extent / kMinSlice));
  const int64_t sliceSize = (extent + slices - 1) / slices;
  const int64_t items = call.batch * slices;
  const blasint lda = static_cast<blasint>(call.transposeA ? m : k);
  const blasint ldb = static_cast<blasint>(call.transposeB ? k : n);
#pragma omp parallel for schedule(static) if (items > 1)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t batch = item / slices;
    const int64_t first = (item % slices) * sliceSize;
    const int64_t size = std::min(sliceSize, extent - first);
    if (size <= 0)
      continue;
    const T *aBatch = a + batch * call.batchStrideA;
    const T *bBatch = b + batch * call.batchStrideB;
    T *cBatch = c + batch * m * n;
    // Rows i of A are at i * lda (or column i, at i, when transposed);
    // columns j of B at j (or row j, at j * ldb, when transposed).
    const T *aSlice =
        splitRows ? aBatch + (call.transposeA ? first : first * lda) : aBatch;
    const T *bSlice =
        splitRows ? bBatch : bBatch + (call.transposeB ? first * ldb : first);
    T *cSlice = splitRows ? cBatch + first * n : cBatch + first;
    gemm(CblasRowMajor, call.transposeA ? CblasTrans : CblasNoTrans,
         call.transposeB ? CblasTrans : CblasNoTrans,
         static_cast<blasint>(splitRows ? size : m),
         static_cast<blasint>(splitRows ? n : size), static_cast<blasint>(k),
         static_cast<T>(call.alpha), aSlice, lda, bSlice, ldb, T(0), cSlice,
         static_cast<blasint>(n));
  }
}

} // namespace

void HostMatmul::run(const void *a, const void *b, void *output,
                     Scratch &scratch) const {
  size_t outputElements = static_cast<size_t>(call.batch * call.m * call.n);
  if (outputElements == 0)
    return;
  if (call.k == 0) {
    // An empty sum: +0 is all zero bits in every float type.
    std::memset(output, 0, outputElements * dtypeBytes(call.resultDType()));
    return;
  }
  const Api &openblas = api();
  switch (call.dtype) {
  case DType::F32:
    gemmBatches(openblas.cblas_sgemm, call, static_cast<const float *>(a),
                static_cast<const float *>(b), static_cast<float *>(output));
    return;
  case DType::F64:
    gemmBatches(openblas.cblas_dgemm, call, static_cast<const double *>(a),
                static_cast<const double *>(b), static_cast<double *>(output));
    return;
  default:
    toF32(call.dtype, a, scratch.a.data(), extentA);
    toF32(call.dtype, b, scratch.b.data(), extentB);
    if (call.resultDType() == DType::F32) {
      // The f32 result of f16/bf16 operands: no rounding to 16 bits.
      gemmBatches(openblas.cblas_sgemm, call,
                  static_cast<const float *>(scratch.a.data()),
                  static_cast<const float *>(scratch.b.data()),
                  static_cast<float *>(output));
      return;
    }
    gemmBatches(openblas.cblas_sgemm, call,
                static_cast<const float *>(scratch.a.data()),
                static_cast<const float *>(scratch.b.data()), scratch.c.data());
    fromF32(call.dtype, scratch.c.data(), output, outputElements);
    return;
  }
}

} // namespace fusec::openblas
