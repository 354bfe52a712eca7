#include "runtime/OpenBlas.h"

#include "runtime/DynamicLibrary.h"
#include "runtime/Error.h"
#include "runtime/HalfFloat.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace fusec::openblas {

namespace {

/// $OMP_NUM_THREADS when it starts with a positive number, else the
/// hardware's threads.
int wantedThreads() {
  if (const char *value = std::getenv("OMP_NUM_THREADS")) {
    long threads = std::strtol(value, nullptr, 10);
    if (threads > 0 && threads <= INT_MAX)
      return static_cast<int>(threads);
  }
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

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
    if (loaded.error.empty() && loaded.api.openblas_set_num_threads)
      loaded.api.openblas_set_num_threads(wantedThreads());
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
  const Api &openblas = api();
  return openblas.openblas_get_num_threads ? openblas.openblas_get_num_threads()
                                           : 0;
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

/// Every batch of one gemm: `gemm` is cblas_sgemm or cblas_dgemm.
template <typename T, typename Gemm>
void gemmBatches(Gemm gemm, const MatmulCall &call, const T *a, const T *b,
                 T *c) {
  blasint m = static_cast<blasint>(call.m), n = static_cast<blasint>(call.n),
          k = static_cast<blasint>(call.k);
  for (int64_t batch = 0; batch < call.batch; ++batch)
    gemm(CblasRowMajor, call.transposeA ? CblasTrans : CblasNoTrans,
         call.transposeB ? CblasTrans : CblasNoTrans, m, n, k,
         static_cast<T>(call.alpha), a + batch * call.batchStrideA,
         call.transposeA ? m : k, b + batch * call.batchStrideB,
         call.transposeB ? k : n, T(0), c + batch * call.m * call.n, n);
}

} // namespace

void HostMatmul::run(const void *a, const void *b, void *output,
                     Scratch &scratch) const {
  size_t outputElements = static_cast<size_t>(call.batch * call.m * call.n);
  if (outputElements == 0)
    return;
  if (call.k == 0) {
    // An empty sum: +0 is all zero bits in every float type.
    std::memset(output, 0, outputElements * dtypeBytes(call.dtype));
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
    gemmBatches(openblas.cblas_sgemm, call,
                static_cast<const float *>(scratch.a.data()),
                static_cast<const float *>(scratch.b.data()), scratch.c.data());
    fromF32(call.dtype, scratch.c.data(), output, outputElements);
    return;
  }
}

} // namespace fusec::openblas
