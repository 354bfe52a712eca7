//===- OpenBlas.h - OpenBLAS, loaded on first use --------------*- C++ -*-===//
//
// Matmuls on the CPU target run through OpenBLAS's CBLAS interface,
// dlopen'ed the first time a program with a matmul is made ready, so that a
// binary runs without OpenBLAS until a matmul needs it. f32 and f64 call
// sgemm and dgemm on the tensors in place; f16 and bf16 convert through f32
// copies. Bias and activation epilogues are the CUDA target's only.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CPU_OPENBLAS_H
#define FUSEC_RUNTIME_CPU_OPENBLAS_H

#include "runtime/core/Program.h"

#include <cstddef>
#include <string>
#include <vector>

namespace fusec::openblas {

// The CBLAS ABI as libopenblas.so.0 exports it: enums and 32-bit integers.
constexpr int CblasRowMajor = 101;
constexpr int CblasNoTrans = 111, CblasTrans = 112;
using CBLAS_LAYOUT = int;
using CBLAS_TRANSPOSE = int;
using blasint = int;

/// The entry points fusec needs: (name, result, parameters), in cblas.h's
/// type names.
#define FUSEC_OPENBLAS_ENTRY_POINTS(X)                                         \
  X(cblas_sgemm, void,                                                         \
    (CBLAS_LAYOUT, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint,         \
     blasint, float, const float *, blasint, const float *, blasint, float,    \
     float *, blasint))                                                        \
  X(cblas_dgemm, void,                                                         \
    (CBLAS_LAYOUT, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint,         \
     blasint, double, const double *, blasint, const double *, blasint,        \
     double, double *, blasint))
/// Entry points used when present.
#define FUSEC_OPENBLAS_OPTIONAL_ENTRY_POINTS(X)                                \
  X(openblas_set_num_threads, void, (int))                                     \
  X(openblas_get_num_threads, int, (void))

struct Api {
#define FUSEC_OPENBLAS_FIELD(name, result, parameters)                         \
  result(*name) parameters = nullptr;
  FUSEC_OPENBLAS_ENTRY_POINTS(FUSEC_OPENBLAS_FIELD)
  FUSEC_OPENBLAS_OPTIONAL_ENTRY_POINTS(FUSEC_OPENBLAS_FIELD)
#undef FUSEC_OPENBLAS_FIELD
};

/// Why OpenBLAS cannot be used here, or "" when it can.
std::string unavailableReason();

/// The loaded OpenBLAS, single-threaded (calls are split across OpenMP's
/// threads instead); throws fusec::Error saying why there is none.
const Api &api();

/// The threads a host matmul is split across (OpenMP's, $OMP_NUM_THREADS
/// or the hardware's).
int threads();

/// f32 working memory that f16 and bf16 calls convert through; one per
/// executable, shared by its calls (they run one at a time).
struct Scratch {
  std::vector<float> a, b, c;
};

/// One MatmulCall made ready for the CPU at construction (checked, OpenBLAS
/// loaded, `scratch` grown to fit): run() allocates nothing.
class HostMatmul {
public:
  /// `step` is the call's index in Program::steps, for errors. Throws
  /// fusec::Error for a bias or an epilogue, sizes past OpenBLAS's 32-bit
  /// integers, or when OpenBLAS is unavailable.
  HostMatmul(const MatmulCall &call, size_t step, Scratch &scratch);

  void run(const void *a, const void *b, void *output, Scratch &scratch) const;

private:
  MatmulCall call;
  std::string what; ///< "matmul step 3 (f32 64x48x3000)"
  /// Elements of A and B the call reads (all batches).
  size_t extentA = 0, extentB = 0;
};

} // namespace fusec::openblas

#endif
