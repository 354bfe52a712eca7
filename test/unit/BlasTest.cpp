//===- BlasTest.cpp - Matmul steps through OpenBLAS and cuBLASLt ---------===//
//
// Programs built by hand (buffers, one MatmulCall, its step) run through
// makeExecutable and are compared with an f64 reference matmul. [blas] tests
// run OpenBLAS on the CPU; [gpu][blas] ones run cuBLASLt and skip cleanly
// without a GPU. Where CUDA's and CBLAS's headers are installed, fusec's
// copy of their ABI is checked against them at compile time.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/Executable.h"
#include "runtime/cache/KernelCache.h"
#include "runtime/cpu/OpenBlas.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <type_traits>

//===----------------------------------------------------------------------===//
// The ABI fusec mirrors, against the real headers
//===----------------------------------------------------------------------===//

#ifdef FUSEC_HAVE_CUBLASLT_H
#include <cublasLt.h>

namespace lt = fusec::cublaslt;

// Every entry point, expanded at global scope where the type names are the
// real ones: same result, same parameter types in the same order.
#define FUSEC_CHECK_CUBLASLT_SIGNATURE(name, result, parameters)               \
  static_assert(std::is_same_v<decltype(&::name), result(*) parameters>,       \
                #name " is declared differently in cublasLt.h");
FUSEC_CUBLASLT_ENTRY_POINTS(FUSEC_CHECK_CUBLASLT_SIGNATURE)
#undef FUSEC_CHECK_CUBLASLT_SIGNATURE

// The types fusec passes in their place: same size and alignment.
#define FUSEC_CHECK_SAME_ABI(type)                                             \
  static_assert(sizeof(lt::type) == sizeof(::type) &&                          \
                    alignof(lt::type) == alignof(::type),                      \
                #type " differs from CUDA's");
FUSEC_CHECK_SAME_ABI(cublasStatus_t)
FUSEC_CHECK_SAME_ABI(cudaDataType)
FUSEC_CHECK_SAME_ABI(cublasComputeType_t)
FUSEC_CHECK_SAME_ABI(cublasLtMatmulDescAttributes_t)
FUSEC_CHECK_SAME_ABI(cublasLtMatrixLayoutAttribute_t)
FUSEC_CHECK_SAME_ABI(cublasLtMatmulPreferenceAttributes_t)
FUSEC_CHECK_SAME_ABI(cublasLtEpilogue_t)
FUSEC_CHECK_SAME_ABI(cublasOperation_t)
FUSEC_CHECK_SAME_ABI(cudaStream_t)
FUSEC_CHECK_SAME_ABI(cublasLtHandle_t)
FUSEC_CHECK_SAME_ABI(cublasLtMatmulDesc_t)
FUSEC_CHECK_SAME_ABI(cublasLtMatrixLayout_t)
FUSEC_CHECK_SAME_ABI(cublasLtMatmulPreference_t)
FUSEC_CHECK_SAME_ABI(cublasLtMatmulAlgo_t)
FUSEC_CHECK_SAME_ABI(cublasLtMatmulHeuristicResult_t)
#undef FUSEC_CHECK_SAME_ABI

#define FUSEC_CHECK_FIELD(type, field)                                         \
  static_assert(offsetof(lt::type, field) == offsetof(::type, field) &&        \
                    sizeof(lt::type::field) == sizeof(::type::field),          \
                #type "::" #field " differs from CUDA's");
FUSEC_CHECK_FIELD(cublasLtMatmulAlgo_t, data)
FUSEC_CHECK_FIELD(cublasLtMatmulHeuristicResult_t, algo)
FUSEC_CHECK_FIELD(cublasLtMatmulHeuristicResult_t, workspaceSize)
FUSEC_CHECK_FIELD(cublasLtMatmulHeuristicResult_t, state)
FUSEC_CHECK_FIELD(cublasLtMatmulHeuristicResult_t, wavesCount)
FUSEC_CHECK_FIELD(cublasLtMatmulHeuristicResult_t, reserved)
#undef FUSEC_CHECK_FIELD

#define FUSEC_CHECK_CONSTANT(name)                                             \
  static_assert(lt::name == static_cast<int>(::name),                          \
                #name " differs from CUDA's");
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_SUCCESS)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_NOT_INITIALIZED)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_ALLOC_FAILED)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_INVALID_VALUE)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_ARCH_MISMATCH)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_MAPPING_ERROR)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_EXECUTION_FAILED)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_INTERNAL_ERROR)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_NOT_SUPPORTED)
FUSEC_CHECK_CONSTANT(CUBLAS_STATUS_LICENSE_ERROR)
FUSEC_CHECK_CONSTANT(CUDA_R_32F)
FUSEC_CHECK_CONSTANT(CUDA_R_64F)
FUSEC_CHECK_CONSTANT(CUDA_R_16F)
FUSEC_CHECK_CONSTANT(CUDA_R_16BF)
FUSEC_CHECK_CONSTANT(CUBLAS_COMPUTE_32F)
FUSEC_CHECK_CONSTANT(CUBLAS_COMPUTE_32F_FAST_TF32)
FUSEC_CHECK_CONSTANT(CUBLAS_COMPUTE_64F)
FUSEC_CHECK_CONSTANT(CUBLAS_OP_N)
FUSEC_CHECK_CONSTANT(CUBLAS_OP_T)
FUSEC_CHECK_CONSTANT(CUBLASLT_MATMUL_DESC_TRANSA)
FUSEC_CHECK_CONSTANT(CUBLASLT_MATMUL_DESC_TRANSB)
FUSEC_CHECK_CONSTANT(CUBLASLT_MATMUL_DESC_EPILOGUE)
FUSEC_CHECK_CONSTANT(CUBLASLT_MATMUL_DESC_BIAS_POINTER)
FUSEC_CHECK_CONSTANT(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE)
FUSEC_CHECK_CONSTANT(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)
FUSEC_CHECK_CONSTANT(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)
FUSEC_CHECK_CONSTANT(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
FUSEC_CHECK_CONSTANT(CUBLASLT_EPILOGUE_DEFAULT)
FUSEC_CHECK_CONSTANT(CUBLASLT_EPILOGUE_RELU)
FUSEC_CHECK_CONSTANT(CUBLASLT_EPILOGUE_BIAS)
FUSEC_CHECK_CONSTANT(CUBLASLT_EPILOGUE_RELU_BIAS)
FUSEC_CHECK_CONSTANT(CUBLASLT_EPILOGUE_GELU)
FUSEC_CHECK_CONSTANT(CUBLASLT_EPILOGUE_GELU_BIAS)
#undef FUSEC_CHECK_CONSTANT
#endif // FUSEC_HAVE_CUBLASLT_H

#ifdef FUSEC_HAVE_CBLAS_H
#include <cblas.h>

namespace cblas_abi {
#ifdef CBLAS_INT // Netlib's cblas.h; OpenBLAS's defines blasint itself
using blasint = CBLAS_INT;
#endif
#define FUSEC_CHECK_CBLAS_SIGNATURE(name, result, parameters)                  \
  static_assert(std::is_same_v<decltype(&::name), result(*) parameters>,       \
                #name " is declared differently in cblas.h");
FUSEC_OPENBLAS_ENTRY_POINTS(FUSEC_CHECK_CBLAS_SIGNATURE)
#undef FUSEC_CHECK_CBLAS_SIGNATURE
static_assert(sizeof(blasint) == sizeof(fusec::openblas::blasint));
static_assert(sizeof(CBLAS_LAYOUT) == sizeof(fusec::openblas::CBLAS_LAYOUT));
static_assert(sizeof(CBLAS_TRANSPOSE) ==
              sizeof(fusec::openblas::CBLAS_TRANSPOSE));
static_assert(fusec::openblas::CblasRowMajor == ::CblasRowMajor);
static_assert(fusec::openblas::CblasNoTrans == ::CblasNoTrans);
static_assert(fusec::openblas::CblasTrans == ::CblasTrans);
} // namespace cblas_abi
#endif // FUSEC_HAVE_CBLAS_H

using namespace fusec;
using Catch::Matchers::Contains;

namespace {

/// One matmul: out = epilogue(alpha * op(A) @ op(B) + bias) per batch.
struct MatmulCase {
  DType dtype = DType::F32;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool transposeA = false, transposeB = false;
  /// One matrix for every batch (batch stride 0).
  bool broadcastA = false, broadcastB = false;
  double alpha = 1;
  bool bias = false;
  Epilogue epilogue = Epilogue::None;

  std::string describe() const {
    std::ostringstream os;
    os << dtypeName(dtype) << " batch " << batch << " m " << m << " n " << n
       << " k " << k << (transposeA ? " A^T" : "") << (transposeB ? " B^T" : "")
       << (broadcastA ? " broadcast A" : "")
       << (broadcastB ? " broadcast B" : "") << " alpha " << alpha
       << (bias ? " bias" : "") << " epilogue " << epilogueName(epilogue);
    return os.str();
  }
};

int addBuffer(Program &program, const std::string &name, DType dtype,
              Shape shape, BufferRole role) {
  BufferDesc buffer;
  buffer.name = name;
  buffer.dtype = dtype;
  buffer.shape = std::move(shape);
  buffer.role = role;
  program.buffers.push_back(std::move(buffer));
  return static_cast<int>(program.buffers.size()) - 1;
}

/// Inputs a, b (and bias), output y; one matmul step.
Program matmulProgram(const MatmulCase &c, Target target) {
  Program program;
  program.name = "blas";
  program.target = target;
  bool batched = c.batch != 1;
  Shape aShape = c.transposeA ? Shape{c.k, c.m} : Shape{c.m, c.k};
  Shape bShape = c.transposeB ? Shape{c.n, c.k} : Shape{c.k, c.n};
  Shape yShape = {c.m, c.n};
  if (batched && !c.broadcastA)
    aShape.insert(aShape.begin(), c.batch);
  if (batched && !c.broadcastB)
    bShape.insert(bShape.begin(), c.batch);
  if (batched)
    yShape.insert(yShape.begin(), c.batch);
  MatmulCall call;
  call.a = addBuffer(program, "a", c.dtype, aShape, BufferRole::Input);
  call.b = addBuffer(program, "b", c.dtype, bShape, BufferRole::Input);
  program.inputs = {call.a, call.b};
  if (c.bias) {
    call.bias = addBuffer(program, "bias", c.dtype, {c.n}, BufferRole::Input);
    program.inputs.push_back(call.bias);
  }
  call.output = addBuffer(program, "y", c.dtype, yShape, BufferRole::Temporary);
  program.outputs = {call.output};
  program.outputNames = {"y"};
  call.dtype = c.dtype;
  call.batch = c.batch;
  call.m = c.m;
  call.n = c.n;
  call.k = c.k;
  call.transposeA = c.transposeA;
  call.transposeB = c.transposeB;
  call.batchStrideA = c.broadcastA ? 0 : c.m * c.k;
  call.batchStrideB = c.broadcastB ? 0 : c.k * c.n;
  call.alpha = c.alpha;
  call.epilogue = c.epilogue;
  program.matmuls.push_back(call);
  program.steps.push_back({StepKind::Matmul, 0});
  return program;
}

std::shared_ptr<KernelCache> testCache() {
  return KernelCache::forDirectory(test::testOptions().cacheDir);
}

double geluTanh(double x) {
  const double kSqrt2OverPi = 0.7978845608028654;
  return 0.5 * x * (1 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

/// How far a result may be from the f64 reference: the output's rounding,
/// plus f32 (or f64) accumulation error growing with sqrt(k) relative to
/// the magnitude sum(|alpha a b|) + |bias|.
struct MatmulTolerance {
  double outputRel;     ///< times |reference|: one rounding to the dtype
  double accumulateRel; ///< times sqrt(k) * magnitude
  double atol;          ///< below the dtype's subnormals
};

MatmulTolerance matmulTolerance(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return {std::ldexp(1.0, -52), 1e-15, 1e-300};
  case DType::F32:
    return {std::ldexp(1.0, -23), 1e-6, 1e-37};
  case DType::F16: // 11-bit significand, accumulated in f32
    return {std::ldexp(1.0, -10), 1e-6, std::ldexp(1.0, -24)};
  case DType::BF16: // 8-bit significand, accumulated in f32
    return {std::ldexp(1.0, -7), 1e-6, 1e-37};
  default:
    FAIL("no matmul on " << dtypeName(dtype));
    return {};
  }
}

void checkMatmul(const MatmulCase &c, Target target, uint64_t seed) {
  INFO(c.describe() << " on " << targetName(target));
  Program program = matmulProgram(c, target);
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs;
  for (int id : program.inputs)
    inputs.push_back(randomTensor(c.dtype, program.buffers[id].shape, rng));
  const Tensor &a = inputs[0], &b = inputs[1];

  std::vector<Tensor> outputs =
      makeExecutable(std::move(program), testCache(), CudaOptions())
          ->run(inputs);
  REQUIRE(outputs.size() == 1);
  const Tensor &y = outputs[0];
  REQUIRE(y.numElements() == c.batch * c.m * c.n);

  MatmulTolerance tolerance = matmulTolerance(c.dtype);
  int64_t mismatches = 0;
  std::string first;
  for (int64_t batch = 0; batch < c.batch; ++batch) {
    int64_t aBase = c.broadcastA || c.batch == 1 ? 0 : batch * c.m * c.k;
    int64_t bBase = c.broadcastB || c.batch == 1 ? 0 : batch * c.k * c.n;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          double x = a.at(aBase + (c.transposeA ? p * c.m + i : i * c.k + p));
          double w = b.at(bBase + (c.transposeB ? j * c.k + p : p * c.n + j));
          sum += x * w;
          magnitude += std::fabs(x * w);
        }
        double z = c.alpha * sum;
        magnitude *= std::fabs(c.alpha);
        if (c.bias) {
          z += inputs[2].at(j);
          magnitude += std::fabs(inputs[2].at(j));
        }
        double expected = z, slope = 1;
        if (c.epilogue == Epilogue::Relu)
          expected = std::max(z, 0.0);
        if (c.epilogue == Epilogue::GeluTanh) {
          expected = geluTanh(z);
          slope = 1.2; // gelu's steepest slope is about 1.13
        }
        double allowed = tolerance.outputRel * std::fabs(expected) +
                         slope * tolerance.accumulateRel *
                             std::sqrt(static_cast<double>(c.k)) * magnitude +
                         tolerance.atol;
        // cuBLASLt's GELU may use a fast tanh (about 2^-11 relative).
        if (c.epilogue == Epilogue::GeluTanh)
          allowed += 1e-3 * std::fabs(z);
        // With a bias or an activation, cuBLASLt may round the product to
        // the output dtype first (as the unfused graph does, and ONNX's
        // reference): one rounding of |alpha * A @ B|, through the slope.
        // Measured on an H100: bf16 gelu_tanh outputs near 0 after the bias
        // cancels most of the product differ by that much.
        if (c.bias || c.epilogue != Epilogue::None)
          allowed += slope * tolerance.outputRel * std::fabs(c.alpha * sum);
        int64_t index = (batch * c.m + i) * c.n + j;
        double got = y.at(index);
        if (!(std::fabs(got - expected) <= allowed)) {
          if (mismatches++ == 0) {
            std::ostringstream os;
            os.precision(10);
            os << "batch " << batch << " [" << i << ", " << j << "]: got "
               << got << ", expected " << expected << " (allowed error "
               << allowed << ")";
            first = os.str();
          }
        }
      }
    }
  }
  INFO(mismatches << " mismatches; first at " << first);
  CHECK(mismatches == 0);
}

/// The shapes every dtype runs through, on either target.
std::vector<MatmulCase> matmulCases(DType dtype) {
  std::vector<MatmulCase> cases;
  auto add = [&](int64_t batch, int64_t m, int64_t n, int64_t k) {
    MatmulCase c;
    c.dtype = dtype;
    c.batch = batch;
    c.m = m;
    c.n = n;
    c.k = k;
    cases.push_back(c);
    return &cases.back();
  };
  add(1, 1, 1, 1);
  add(1, 1, 9, 5);
  add(1, 9, 1, 5);
  add(1, 6, 4, 1);
  add(1, 7, 13, 29);
  add(1, 64, 48, 3000);
  add(1, 1, 33, 1000);
  add(1, 4, 5, 0);  // an empty sum: zeros
  add(1, 0, 5, 3);  // an empty output
  add(3, 7, 13, 0); // batched, empty sums
  add(3, 7, 13, 29);
  add(3, 7, 13, 29)->broadcastA = true;
  add(3, 7, 13, 29)->broadcastB = true;
  add(1, 7, 13, 29)->transposeA = true;
  add(1, 7, 13, 29)->transposeB = true;
  MatmulCase *both = add(1, 7, 13, 29);
  both->transposeA = both->transposeB = true;
  MatmulCase *batchedT = add(3, 5, 11, 17);
  batchedT->transposeA = true;
  batchedT->broadcastB = true;
  MatmulCase *batchedTB = add(2, 5, 11, 17);
  batchedTB->transposeB = true;
  batchedTB->broadcastA = true;
  add(1, 7, 13, 29)->alpha = -0.75;
  MatmulCase *scaled = add(3, 16, 8, 300);
  scaled->alpha = 0.125;
  scaled->transposeB = true;
  return cases;
}

const DType kMatmulDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

} // namespace

//===----------------------------------------------------------------------===//
// The CPU target: OpenBLAS
//===----------------------------------------------------------------------===//

TEST_CASE("OpenBLAS loads and is told its threads", "[blas]") {
  INFO(openblas::unavailableReason());
  REQUIRE(openblas::unavailableReason().empty());
  CHECK(openblas::threads() >= 0);
}

TEST_CASE("matmuls on the CPU match an f64 reference on every dtype",
          "[blas]") {
  uint64_t seed = 1;
  for (DType dtype : kMatmulDTypes)
    for (const MatmulCase &c : matmulCases(dtype))
      checkMatmul(c, Target::Cpu, seed++);
}

TEST_CASE("matmuls split across threads match an f64 reference", "[blas]") {
  // Past a million multiply-adds a CPU matmul is split into slices of the
  // longer of M and N (one single-threaded BLAS call each): slices of rows
  // and of columns, with either operand transposed, batched and broadcast.
  struct Split {
    int64_t batch, m, n, k;
    bool transposeA, transposeB, broadcastB;
  };
  const Split splits[] = {{1, 96, 40, 300, false, true, false},
                          {1, 40, 96, 300, true, false, false},
                          {2, 48, 80, 300, true, true, false},
                          {2, 80, 48, 300, true, false, true},
                          {1, 37, 1000, 64, false, false, false}};
  uint64_t seed = 100;
  for (DType dtype : {DType::F32, DType::F64, DType::BF16})
    for (const Split &split : splits) {
      MatmulCase c;
      c.dtype = dtype;
      c.batch = split.batch;
      c.m = split.m;
      c.n = split.n;
      c.k = split.k;
      c.transposeA = split.transposeA;
      c.transposeB = split.transposeB;
      c.broadcastB = split.broadcastB;
      checkMatmul(c, Target::Cpu, seed++);
    }
}

TEST_CASE("a bias or an epilogue on the CPU is a clear error", "[blas]") {
  for (int variant = 0; variant < 3; ++variant) {
    MatmulCase c;
    c.m = 4;
    c.n = 3;
    c.k = 2;
    c.bias = variant != 1;
    c.epilogue = variant == 0   ? Epilogue::None
                 : variant == 1 ? Epilogue::Relu
                                : Epilogue::GeluTanh;
    CHECK_THROWS_WITH(
        makeExecutable(matmulProgram(c, Target::Cpu), testCache(), {}),
        Contains("epilogues run only on the CUDA target") &&
            Contains("matmul step 0 (f32 4x3x2)"));
  }
}

TEST_CASE("kernels matmuls and views run in step order", "[blas]") {
  // t = 2 * x (a kernel); y = t @ w (a matmul); v = y viewed as [20].
  Program program;
  program.name = "steps";
  int x = addBuffer(program, "x", DType::F32, {4, 6}, BufferRole::Input);
  int w = addBuffer(program, "w", DType::F32, {6, 5}, BufferRole::Constant);
  int t = addBuffer(program, "t", DType::F32, {4, 6}, BufferRole::Temporary);
  int y = addBuffer(program, "y", DType::F32, {4, 5}, BufferRole::Temporary);
  int v = addBuffer(program, "v", DType::F32, {20}, BufferRole::Alias);
  program.buffers[v].aliasOf = y;
  std::mt19937_64 rng(7);
  Tensor weights = randomTensor(DType::F32, {6, 5}, rng);
  program.buffers[w].data.assign(weights.bytes.begin(), weights.bytes.end());
  program.source = R"(
extern "C" void twice(const void *const *in, void *const *out) {
  for (int i = 0; i < 24; ++i)
    ((float *)out[0])[i] = 2.0f * ((const float *)in[0])[i];
}
)";
  KernelDesc kernel;
  kernel.name = "twice";
  kernel.ops = {"mul"};
  kernel.inputs = {x};
  kernel.outputs = {t};
  program.kernels.push_back(kernel);
  MatmulCall call;
  call.a = t;
  call.b = w;
  call.output = y;
  call.m = 4;
  call.n = 5;
  call.k = 6;
  program.matmuls.push_back(call);
  program.steps = {
      {StepKind::Kernel, 0}, {StepKind::Matmul, 0}, {StepKind::View, v}};
  program.inputs = {x};
  program.outputs = {y, v};
  program.outputNames = {"y", "v"};

  SECTION("the run") {
    Tensor input = randomTensor(DType::F32, {4, 6}, rng);
    std::vector<Tensor> outputs =
        makeExecutable(program, testCache(), {})->run({input});
    REQUIRE(outputs.size() == 2);
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        double expected = 0;
        for (int64_t p = 0; p < 6; ++p)
          expected += 2.0 * input.at(i * 6 + p) * weights.at(p * 5 + j);
        CHECK(outputs[0].at(i * 5 + j) == Approx(expected).epsilon(1e-5));
        CHECK(outputs[1].at(i * 5 + j) == outputs[0].at(i * 5 + j));
      }
    }
  }

  SECTION("the plan lists every step") {
    nlohmann::json plan = nlohmann::json::parse(program.planJson());
    REQUIRE(plan["steps"].size() == 3);
    CHECK(plan["steps"][0]["kernel"] == "twice");
    const nlohmann::json &matmul = plan["steps"][1];
    CHECK(matmul["matmul"] == "matmul f32: y[4x5] = t[4x6] @ w[6x5], alpha 1");
    CHECK(matmul["inputs"] == nlohmann::json({"t", "w"}));
    CHECK(matmul["outputs"] == nlohmann::json({"y"}));
    CHECK(matmul["m"] == 4);
    CHECK(matmul["n"] == 5);
    CHECK(matmul["k"] == 6);
    CHECK(matmul["batch"] == 1);
    CHECK(matmul["transpose_a"] == false);
    CHECK(matmul["epilogue"] == "none");
    CHECK(matmul["bias"].is_null());
    CHECK(plan["steps"][2]["view"] == "v");
    CHECK(plan["steps"][2]["of"] == "y");
    CHECK(plan["kernels"].size() == 1);
    CHECK(plan["buffers"].size() == 5);
  }

  SECTION("steps that leave a matmul out are an internal error") {
    program.steps.pop_back();
    program.steps.erase(program.steps.begin() + 1);
    CHECK_THROWS_WITH(makeExecutable(program, testCache(), {}),
                      Contains("matmul 0 runs 0 times"));
  }

  SECTION("a call past its buffers is an internal error") {
    program.matmuls[0].k = 7;
    CHECK_THROWS_WITH(makeExecutable(program, testCache(), {}),
                      Contains("internal error: matmul step 1 (f32 4x5x7)") &&
                          Contains("'t' holds 24 elements"));
  }
}

TEST_CASE("a matmul describes itself in one line", "[blas]") {
  MatmulCase c;
  c.dtype = DType::BF16;
  c.m = 8;
  c.n = 16;
  c.k = 4;
  c.transposeB = true;
  c.bias = true;
  c.epilogue = Epilogue::GeluTanh;
  Program program = matmulProgram(c, Target::Cuda);
  CHECK(program.matmuls[0].describe(program.buffers) ==
        "matmul bf16: y[8x16] = a[8x4] @ b^T[4x16], alpha 1, bias bias, "
        "epilogue gelu_tanh");
  c.batch = 3;
  c.broadcastB = true;
  c.bias = false;
  c.epilogue = Epilogue::None;
  c.alpha = 0.1;
  program = matmulProgram(c, Target::Cuda);
  CHECK(program.matmuls[0].describe(program.buffers) ==
        "matmul bf16: y[3x8x16] = a[3x8x4] @ b^T[4x16], batch 3 (strides 32 "
        "and 0), alpha 0.1");
  CHECK(std::string(epilogueName(Epilogue::Relu)) == "relu");
}

TEST_CASE("cuBLASLt is found or its absence explained", "[blas]") {
  // Needs no GPU: only dlopen.
  std::string reason = cuda::cublasLtUnavailableReason();
  if (!reason.empty())
    CHECK_THAT(reason, Contains("libcublasLt"));
  CHECK(cublaslt::statusName(cublaslt::CUBLAS_STATUS_NOT_SUPPORTED) ==
        "CUBLAS_STATUS_NOT_SUPPORTED");
  CHECK(cublaslt::statusName(99) == "CUBLAS_STATUS_99");
}

//===----------------------------------------------------------------------===//
// The CUDA target: cuBLASLt
//===----------------------------------------------------------------------===//

TEST_CASE("matmuls on the GPU match an f64 reference on every dtype",
          "[gpu][blas]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  INFO(cuda::cublasLtUnavailableReason());
  REQUIRE(cuda::cublasLtUnavailableReason().empty());
  uint64_t seed = 1001;
  for (DType dtype : kMatmulDTypes)
    for (const MatmulCase &c : matmulCases(dtype))
      checkMatmul(c, Target::Cuda, seed++);
}

TEST_CASE("cuBLASLt bias and activation epilogues match the reference",
          "[gpu][blas]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  REQUIRE(cuda::cublasLtUnavailableReason().empty());
  uint64_t seed = 2001;
  // f64 is left out: cuBLASLt's epilogues are not documented for it.
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    for (MatmulCase c : matmulCases(dtype)) {
      if (c.k == 0 || (c.m != 7 && c.m != 64 && c.batch == 1))
        continue;
      for (bool bias : {false, true}) {
        for (Epilogue epilogue :
             {Epilogue::None, Epilogue::Relu, Epilogue::GeluTanh}) {
          if (!bias && epilogue == Epilogue::None)
            continue; // the plain matmul test has it
          c.bias = bias;
          c.epilogue = epilogue;
          checkMatmul(c, Target::Cuda, seed++);
        }
      }
    }
  }
}

TEST_CASE("a k of zero with an epilogue is an internal error", "[blas]") {
  // Checked before the device is touched: no GPU needed.
  MatmulCase c;
  c.k = 0;
  c.m = c.n = 4;
  c.epilogue = Epilogue::Relu;
  CHECK_THROWS_WITH(
      makeExecutable(matmulProgram(c, Target::Cuda), testCache(), {}),
      Contains("internal error: matmul step 0 (f32 4x4x0)"));
}
