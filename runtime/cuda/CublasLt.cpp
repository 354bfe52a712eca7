#include "runtime/cuda/CublasLt.h"

#include "runtime/core/DynamicLibrary.h"
#include "runtime/core/Error.h"

#include <climits>
#include <map>
#include <mutex>
#include <tuple>

namespace fusec {

namespace cublaslt {

std::string statusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_" + std::to_string(status);
}

} // namespace cublaslt

namespace cuda {

using namespace cublaslt;

namespace {

/// The most workspace the heuristic may ask for (what cuBLAS recommends on
/// Hopper).
constexpr uint64_t kMaxWorkspaceBytes = uint64_t(32) << 20;

const dynlib::LoadedLibrary<Api> &loadedCublasLt() {
  static const dynlib::LoadedLibrary<Api> &loaded =
      *new dynlib::LoadedLibrary<Api>(dynlib::loadLibrary<Api>(
          {"libcublasLt.so.13", "libcublasLt.so"},
          "cuBLASLt (libcublasLt.so.13)",
          " (it comes with the CUDA 13 toolkit; put its lib64 directory on "
          "LD_LIBRARY_PATH)",
          [](void *library, Api &api, std::string &missing) {
#define FUSEC_RESOLVE_CUBLASLT(name, result, parameters)                       \
  dynlib::resolve(library, api.name, #name, false, missing);
            FUSEC_CUBLASLT_ENTRY_POINTS(FUSEC_RESOLVE_CUBLASLT)
#undef FUSEC_RESOLVE_CUBLASLT
          }));
  return loaded;
}

/// The process's cuBLASLt handle, created (in the device's primary context)
/// on first use.
cublasLtHandle_t sharedHandle() {
  static const std::pair<cublasLtHandle_t, cublasStatus_t> created = [] {
    cublasLtHandle_t handle = nullptr;
    cublasStatus_t status = cublasLt().cublasLtCreate(&handle);
    return std::make_pair(handle, status);
  }();
  if (created.second != CUBLAS_STATUS_SUCCESS)
    throw Error("fusec: cublasLtCreate failed: " + statusName(created.second));
  return created.first;
}

/// Everything the heuristic's choice depends on.
using HeuristicKey = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t,
                                int64_t, int64_t, bool, bool, int, bool, bool>;

struct HeuristicChoice {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
};

std::mutex heuristicMutex;
std::map<HeuristicKey, HeuristicChoice> &heuristicCache() {
  static auto *cache = new std::map<HeuristicKey, HeuristicChoice>;
  return *cache;
}

cudaDataType dataType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::F64:
    return CUDA_R_64F;
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    throw Error(std::string("fusec: internal error: no cuBLASLt matmul on ") +
                dtypeName(dtype));
  }
}

cublasLtEpilogue_t epilogueOf(Epilogue epilogue, bool bias) {
  switch (epilogue) {
  case Epilogue::None:
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::Relu:
    return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  case Epilogue::GeluTanh:
    return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

} // namespace

std::string cublasLtUnavailableReason() { return loadedCublasLt().error; }

const Api &cublasLt() {
  return loadedCublasLt().get("fusec: matmuls on the CUDA target need "
                              "cuBLASLt: ");
}

void prepareCublasLt() {
  cublasLt();
  // The handle belongs to the context current on this thread.
  check(driver().cuCtxSetCurrent(device().context), "cuCtxSetCurrent",
        "cuBLASLt's handle");
  sharedHandle();
}

CublasLtMatmul::CublasLtMatmul(const MatmulCall &call, size_t step,
                               const Operands &operands, bool tf32)
    : what(matmulStepName(call, step)), operands(operands) {
  bool hasBias = call.bias >= 0;
  if (call.batch * call.m * call.n == 0) {
    empty = true;
    return;
  }
  if (call.k == 0) {
    // Codegen folds these away; an empty sum is zero.
    if (hasBias || call.epilogue != Epilogue::None)
      throw Error("fusec: internal error: " + what +
                  " has k == 0 with a bias or an epilogue");
    zeroFill = true;
    outputBytes =
        size_t(call.batch * call.m * call.n) * dtypeBytes(call.resultDType());
    return;
  }
  if (call.batch > INT32_MAX)
    throw Error("fusec: " + what + ": more batches than cuBLASLt takes");

  const Api &api = cublasLt();
  device(); // the context the handle is created in
  handle = sharedHandle();
  cudaDataType type = dataType(call.dtype);
  // f32 for f16/bf16 operands: the accumulator written as it is.
  cudaDataType resultType = dataType(call.resultDType());
  doubleScale = call.dtype == DType::F64;
  cublasComputeType_t compute = doubleScale ? CUBLAS_COMPUTE_64F
                                : (tf32 && call.dtype == DType::F32)
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  alpha64 = call.alpha;
  alpha32 = static_cast<float>(call.alpha);

  try {
    check(api.cublasLtMatmulDescCreate(&desc, compute,
                                       doubleScale ? CUDA_R_64F : CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    auto setDesc = [&](cublasLtMatmulDescAttributes_t attribute,
                       const auto &value) {
      check(api.cublasLtMatmulDescSetAttribute(desc, attribute, &value,
                                               sizeof value),
            "cublasLtMatmulDescSetAttribute");
    };
    // cuBLASLt's A is fusec's B (and B is A): C^T = op(B)^T op(A)^T.
    setDesc(CUBLASLT_MATMUL_DESC_TRANSA,
            int32_t(call.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N));
    setDesc(CUBLASLT_MATMUL_DESC_TRANSB,
            int32_t(call.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N));
    setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE,
            uint32_t(epilogueOf(call.epilogue, hasBias)));
    if (hasBias) {
      setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER,
              reinterpret_cast<const void *>(operands.bias));
      setDesc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(resultType));
    }

    // Column-major views of row-major storage: a row-major [r, c] matrix
    // is a column-major c x r one with leading dimension c.
    auto makeLayout = [&](cublasLtMatrixLayout_t &layout, int64_t rows,
                          int64_t cols, int64_t batchStride,
                          cudaDataType layoutType) {
      check(api.cublasLtMatrixLayoutCreate(&layout, layoutType, uint64_t(rows),
                                           uint64_t(cols), rows),
            "cublasLtMatrixLayoutCreate");
      if (call.batch == 1)
        return;
      int32_t count = static_cast<int32_t>(call.batch);
      check(
          api.cublasLtMatrixLayoutSetAttribute(
              layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
          "cublasLtMatrixLayoutSetAttribute");
      check(api.cublasLtMatrixLayoutSetAttribute(
                layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                &batchStride, sizeof batchStride),
            "cublasLtMatrixLayoutSetAttribute");
    };
    // B is stored [k, n] (an n x k column-major matrix), or [n, k].
    if (call.transposeB)
      makeLayout(layoutA, call.k, call.n, call.batchStrideB, type);
    else
      makeLayout(layoutA, call.n, call.k, call.batchStrideB, type);
    // A is stored [m, k] (a k x m column-major matrix), or [k, m].
    if (call.transposeA)
      makeLayout(layoutB, call.m, call.k, call.batchStrideA, type);
    else
      makeLayout(layoutB, call.k, call.m, call.batchStrideA, type);
    makeLayout(layoutD, call.n, call.m, call.m * call.n, resultType);

    HeuristicKey key{static_cast<int>(call.dtype),
                     static_cast<int>(call.resultDType()),
                     call.m,
                     call.n,
                     call.k,
                     call.batch,
                     call.batchStrideA,
                     call.batchStrideB,
                     call.transposeA,
                     call.transposeB,
                     static_cast<int>(call.epilogue),
                     hasBias,
                     compute == CUBLAS_COMPUTE_32F_FAST_TF32};
    std::lock_guard<std::mutex> lock(heuristicMutex);
    auto cached = heuristicCache().find(key);
    if (cached != heuristicCache().end()) {
      algo = cached->second.algo;
      workspaceSize = cached->second.workspaceSize;
      return;
    }
    cublasLtMatmulPreference_t preference = nullptr;
    check(api.cublasLtMatmulPreferenceCreate(&preference),
          "cublasLtMatmulPreferenceCreate");
    uint64_t maxWorkspace = kMaxWorkspaceBytes;
    cublasStatus_t status = api.cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace,
        sizeof maxWorkspace);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (status == CUBLAS_STATUS_SUCCESS)
      status = api.cublasLtMatmulAlgoGetHeuristic(
          handle, desc, layoutA, layoutB, layoutD, layoutD, preference, 1,
          &result, &found);
    api.cublasLtMatmulPreferenceDestroy(preference);
    check(status, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS)
      throw Error("fusec: cuBLASLt has no algorithm for " + what +
                  ", epilogue " + epilogueName(call.epilogue) +
                  (hasBias ? " with a bias" : ""));
    algo = result.algo;
    workspaceSize = result.workspaceSize;
    heuristicCache().emplace(key, HeuristicChoice{algo, workspaceSize});
  } catch (...) {
    destroy();
    throw;
  }
}

CublasLtMatmul::~CublasLtMatmul() { destroy(); }

void CublasLtMatmul::destroy() {
  if (!desc && !layoutA && !layoutB && !layoutD)
    return;
  const Api &api = cublasLt();
  for (cublasLtMatrixLayout_t *layout : {&layoutA, &layoutB, &layoutD})
    if (*layout) {
      api.cublasLtMatrixLayoutDestroy(*layout);
      *layout = nullptr;
    }
  if (desc) {
    api.cublasLtMatmulDescDestroy(desc);
    desc = nullptr;
  }
}

void CublasLtMatmul::fail(const char *call, cublasStatus_t status) const {
  throw Error("fusec: " + std::string(call) + " for " + what + ": " +
              statusName(status));
}

void CublasLtMatmul::rebind(const Operands &other) {
  if (other.bias != operands.bias && desc) {
    const void *bias = reinterpret_cast<const void *>(other.bias);
    check(cublasLt().cublasLtMatmulDescSetAttribute(
              desc, cublaslt::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
              sizeof bias),
          "cublasLtMatmulDescSetAttribute");
  }
  operands = other;
}

void CublasLtMatmul::enqueue(CUstream stream, CUdeviceptr workspace) const {
  if (empty)
    return;
  if (zeroFill) {
    cuda::check(
        driver().cuMemsetD8Async(operands.output, 0, outputBytes, stream),
        "cuMemsetD8Async", what);
    return;
  }
  const void *alpha = doubleScale ? static_cast<const void *>(&alpha64)
                                  : static_cast<const void *>(&alpha32);
  const void *beta = doubleScale ? static_cast<const void *>(&beta64)
                                 : static_cast<const void *>(&beta32);
  auto pointer = [](CUdeviceptr address) {
    return reinterpret_cast<void *>(address);
  };
  check(cublasLt().cublasLtMatmul(handle, desc, alpha, pointer(operands.b),
                                  layoutA, pointer(operands.a), layoutB, beta,
                                  pointer(operands.output), layoutD,
                                  pointer(operands.output), layoutD, &algo,
                                  pointer(workspace), workspaceSize, stream),
        "cublasLtMatmul");
}

} // namespace cuda

} // namespace fusec
