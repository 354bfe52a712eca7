//===- CublasLt.h - cuBLASLt, loaded on first use --------------*- C++ -*-===//
//
// Matmuls on the GPU run through cuBLASLt, dlopen'ed the first time a
// program with a matmul is made ready for the CUDA target (like the driver
// and NVRTC: no CUDA header or library is needed at build time, and a binary
// runs where libcublasLt is absent until a matmul needs it).
//
// The ABI below mirrors cublasLt.h, cublas_api.h and library_types.h of
// CUDA 13: test/unit/BlasTest.cpp checks every constant, struct layout and
// entry point signature against the real headers when they are installed.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CUDA_CUBLASLT_H
#define FUSEC_RUNTIME_CUDA_CUBLASLT_H

#include "runtime/core/Program.h"
#include "runtime/cuda/CudaApi.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace fusec::cublaslt {

// Enumerations are C enums (four bytes) in the real headers.
using cublasStatus_t = int32_t;
using cudaDataType = int32_t;
using cublasComputeType_t = int32_t;
using cublasLtMatmulDescAttributes_t = int32_t;
using cublasLtMatrixLayoutAttribute_t = int32_t;
using cublasLtMatmulPreferenceAttributes_t = int32_t;
using cublasLtEpilogue_t = int32_t;
using cublasOperation_t = int32_t;
using cudaStream_t = cuda::CUstream;

using cublasLtHandle_t = struct cublasLtContext *;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque *;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque *;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque *;

/// Semi-opaque: an algorithm the heuristic chose, passed back by value.
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};

struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

// cublasStatus_t
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_INITIALIZED = 1;
constexpr cublasStatus_t CUBLAS_STATUS_ALLOC_FAILED = 3;
constexpr cublasStatus_t CUBLAS_STATUS_INVALID_VALUE = 7;
constexpr cublasStatus_t CUBLAS_STATUS_ARCH_MISMATCH = 8;
constexpr cublasStatus_t CUBLAS_STATUS_MAPPING_ERROR = 11;
constexpr cublasStatus_t CUBLAS_STATUS_EXECUTION_FAILED = 13;
constexpr cublasStatus_t CUBLAS_STATUS_INTERNAL_ERROR = 14;
constexpr cublasStatus_t CUBLAS_STATUS_NOT_SUPPORTED = 15;
constexpr cublasStatus_t CUBLAS_STATUS_LICENSE_ERROR = 16;

// cudaDataType
constexpr cudaDataType CUDA_R_32F = 0;
constexpr cudaDataType CUDA_R_64F = 1;
constexpr cudaDataType CUDA_R_16F = 2;
constexpr cudaDataType CUDA_R_16BF = 14;

// cublasComputeType_t
constexpr cublasComputeType_t CUBLAS_COMPUTE_32F = 68;
constexpr cublasComputeType_t CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
constexpr cublasComputeType_t CUBLAS_COMPUTE_64F = 70;

// cublasOperation_t
constexpr cublasOperation_t CUBLAS_OP_N = 0;
constexpr cublasOperation_t CUBLAS_OP_T = 1;

// cublasLtMatmulDescAttributes_t, with the type each attribute takes.
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_TRANSA = 3; // i32
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_TRANSB = 4; // i32
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_EPILOGUE =
    7; // u32
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_BIAS_POINTER =
    8; // const void *
constexpr cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE =
    26; // i32

// cublasLtMatrixLayoutAttribute_t
constexpr cublasLtMatrixLayoutAttribute_t CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT =
    5; // i32
constexpr cublasLtMatrixLayoutAttribute_t
    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6; // i64

// cublasLtMatmulPreferenceAttributes_t
constexpr cublasLtMatmulPreferenceAttributes_t
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1; // u64

// cublasLtEpilogue_t
constexpr cublasLtEpilogue_t CUBLASLT_EPILOGUE_DEFAULT = 1;
constexpr cublasLtEpilogue_t CUBLASLT_EPILOGUE_RELU = 2;
constexpr cublasLtEpilogue_t CUBLASLT_EPILOGUE_BIAS = 4;
constexpr cublasLtEpilogue_t CUBLASLT_EPILOGUE_RELU_BIAS = 6;
constexpr cublasLtEpilogue_t CUBLASLT_EPILOGUE_GELU = 32;
constexpr cublasLtEpilogue_t CUBLASLT_EPILOGUE_GELU_BIAS = 36;

/// The cuBLASLt entry points fusec uses: (name, result, parameters). The
/// type names are those of cublasLt.h, so the test can expand this list
/// against the real declarations.
#define FUSEC_CUBLASLT_ENTRY_POINTS(X)                                         \
  X(cublasLtCreate, cublasStatus_t, (cublasLtHandle_t *))                      \
  X(cublasLtMatmulDescCreate, cublasStatus_t,                                  \
    (cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType))               \
  X(cublasLtMatmulDescDestroy, cublasStatus_t, (cublasLtMatmulDesc_t))         \
  X(cublasLtMatmulDescSetAttribute, cublasStatus_t,                            \
    (cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *,       \
     size_t))                                                                  \
  X(cublasLtMatrixLayoutCreate, cublasStatus_t,                                \
    (cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t, int64_t))     \
  X(cublasLtMatrixLayoutDestroy, cublasStatus_t, (cublasLtMatrixLayout_t))     \
  X(cublasLtMatrixLayoutSetAttribute, cublasStatus_t,                          \
    (cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, const void *,    \
     size_t))                                                                  \
  X(cublasLtMatmulPreferenceCreate, cublasStatus_t,                            \
    (cublasLtMatmulPreference_t *))                                            \
  X(cublasLtMatmulPreferenceDestroy, cublasStatus_t,                           \
    (cublasLtMatmulPreference_t))                                              \
  X(cublasLtMatmulPreferenceSetAttribute, cublasStatus_t,                      \
    (cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,         \
     const void *, size_t))                                                    \
  X(cublasLtMatmulAlgoGetHeuristic, cublasStatus_t,                            \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,           \
     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,   \
     cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *,       \
     int *))                                                                   \
  X(cublasLtMatmul, cublasStatus_t,                                            \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,       \
     cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t,             \
     const void *, const void *, cublasLtMatrixLayout_t, void *,               \
     cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,     \
     cudaStream_t))                                                            \
  X(cublasLtGetVersion, size_t, (void))

struct Api {
#define FUSEC_CUBLASLT_FIELD(name, result, parameters)                         \
  result(*name) parameters = nullptr;
  FUSEC_CUBLASLT_ENTRY_POINTS(FUSEC_CUBLASLT_FIELD)
#undef FUSEC_CUBLASLT_FIELD
};

/// "CUBLAS_STATUS_NOT_SUPPORTED" (or "CUBLAS_STATUS_<number>").
std::string statusName(cublasStatus_t status);

} // namespace fusec::cublaslt

namespace fusec::cuda {

/// Why cuBLASLt cannot be used here ("" when libcublasLt loads with every
/// entry point fusec uses). Does not need a GPU.
std::string cublasLtUnavailableReason();

/// The loaded cuBLASLt, or throws fusec::Error saying why there is none.
const cublaslt::Api &cublasLt();

/// Loads cuBLASLt and creates the process's handle in the device's context
/// (tens of ms on a cold start), so that a model's first matmul finds it
/// ready. Throws fusec::Error when either is unavailable.
void prepareCublasLt();

/// One MatmulCall made ready for cublasLtMatmul at construction (matmul
/// descriptor, layouts, the heuristic's algorithm, cached process-wide by
/// shape): enqueue() allocates nothing. Row-major C = op(A) op(B) is
/// computed as the column-major C^T = op(B)^T op(A)^T, so cuBLASLt's bias
/// (one value per row of its D) is one value per output column, as fusec's.
class CublasLtMatmul {
public:
  struct Operands {
    CUdeviceptr a = 0, b = 0, output = 0, bias = 0;
  };
  /// `step` is the call's index in Program::steps, for errors. Throws
  /// fusec::Error when cuBLASLt is unavailable or has no algorithm.
  CublasLtMatmul(const MatmulCall &call, size_t step, const Operands &operands,
                 bool tf32);
  ~CublasLtMatmul();
  CublasLtMatmul(const CublasLtMatmul &) = delete;
  CublasLtMatmul &operator=(const CublasLtMatmul &) = delete;

  /// Device workspace enqueue() needs (0: none).
  size_t workspaceBytes() const { return workspaceSize; }
  /// Runs the call on `stream`; `workspace` holds workspaceBytes().
  void enqueue(CUstream stream, CUdeviceptr workspace) const;
  /// Points the call at other buffers of the same shapes (a device run's).
  void rebind(const Operands &other);

private:
  /// Releases the descriptors and layouts created so far.
  void destroy();
  [[noreturn]] void fail(const char *call,
                         cublaslt::cublasStatus_t status) const;
  void check(cublaslt::cublasStatus_t status, const char *call) const {
    if (status != cublaslt::CUBLAS_STATUS_SUCCESS)
      fail(call, status);
  }

  std::string what; ///< "matmul step 3 (bf16 8192x4096x4096)"
  Operands operands;
  /// Nothing to do (an empty output), or only zeroing it (k == 0).
  bool empty = false, zeroFill = false;
  size_t outputBytes = 0;
  /// alpha and beta in the scale type (f64 for f64, else f32).
  double alpha64 = 1, beta64 = 0;
  float alpha32 = 1, beta32 = 0;
  bool doubleScale = false;
  cublaslt::cublasLtHandle_t handle = nullptr;
  cublaslt::cublasLtMatmulDesc_t desc = nullptr;
  cublaslt::cublasLtMatrixLayout_t layoutA = nullptr, layoutB = nullptr,
                                   layoutD = nullptr;
  cublaslt::cublasLtMatmulAlgo_t algo{};
  size_t workspaceSize = 0;
};

} // namespace fusec::cuda

#endif
