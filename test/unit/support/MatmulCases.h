//===- MatmulCases.h - matmul and gemm test cases against f64 --*- C++ -*-===//
//
// What the matmul tests of every layer share: a case is a graph, its inputs
// (seeded uniform [-1, 1]), the plain f64 loops of its reference (an
// independent one: it shares no code with the compiler) and the program it
// expects: how many library calls and kernels, on the CPU target and on the
// CUDA target (lowered even without a GPU, since lowering needs neither the
// device nor NVRTC). runCases checks both.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_SUPPORT_MATMULCASES_H
#define FUSEC_TEST_UNIT_SUPPORT_MATMULCASES_H

#include "test/unit/ReferenceOps.h"
#include "test/unit/TestUtil.h"

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

/// One CPU test case and one [gpu] test case running `body(target)` on
/// every float dtype.
#define MATMUL_TARGET_TEST(name, body)                                         \
  TEST_CASE(name, "[matmul]") {                                                \
    for (DType dtype : test::matmul::kFloatTypes) {                            \
      INFO("dtype " << dtypeName(dtype));                                      \
      body(dtype, Target::Cpu);                                                \
    }                                                                          \
  }                                                                            \
  TEST_CASE(name " on the GPU", "[matmul][gpu]") {                             \
    FUSEC_SKIP_IF(cuda::unavailableReason());                                  \
    for (DType dtype : test::matmul::kFloatTypes) {                            \
      INFO("dtype " << dtypeName(dtype));                                      \
      body(dtype, Target::Cuda);                                               \
    }                                                                          \
  }

namespace fusec::test::matmul {

using Attrs = std::map<std::string, AttrValue>;

inline const DType kFloatTypes[] = {DType::F64, DType::F32, DType::F16,
                                    DType::BF16};
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

//===----------------------------------------------------------------------===//
// Tolerances
//===----------------------------------------------------------------------===//
// A dot product of k uniform [-1, 1] terms has magnitude ~sqrt(k)/3, and
// the rounding error of its accumulation (f32 for f32/f16/bf16, f64 for f64;
// BLAS and cuBLASLt sum in blocks with FMAs) grows like sqrt(k) units of
// the accumulator's rounding times that magnitude. So the bound is
//   |got - expected| <= c * sqrt(k) * (1 + |expected|) + ulp(expected)
// with c a few roundings of the dtype: f64 1e-13 and f32 2e-6 (a few
// hundred ulps, room for pointwise math after the call: erf, tanh); f16
// 2e-3 and bf16 1.6e-2 (about four half-ulps, 2^-11 and 2^-8: the call
// rounds its result to the dtype, and a kernel after it rounds again).
// `expected` is the f64 result rounded to the output dtype, and the one
// ulp of the output dtype at |expected| pays for that rounding: a result
// that rounded the other way of a tie, or that went through one more
// rounding (16-bit intermediates), is still in bounds even for k = 1.
double dtypeCoefficient(DType dtype);

/// One unit in the last place of `dtype` at |x| (its smallest subnormal at
/// 0).
double ulpAt(DType dtype, double x);

/// Unfused 16-bit graphs round every intermediate (a decomposed gelu is
/// half a dozen ops): their bound is 5x wider.
double unfusedWidening(DType dtype);

//===----------------------------------------------------------------------===//
// The f64 reference
//===----------------------------------------------------------------------===//
/// `t` read as doubles into a new F64 tensor.
Tensor toF64(const Tensor &t);

/// The row-major linear index of `coordinate` (right-aligned with `shape`)
/// in a tensor of `shape` broadcast to it: dims of 1 repeat.
int64_t broadcastIndex(const Shape &shape, const Shape &coordinate);

/// The coordinate of linear `index` in `shape`.
Shape coordinateOf(const Shape &shape, int64_t index);

/// NumPy matmul's shapes: a 1-D lhs is a row and a 1-D rhs a column
/// (their unit dims are dropped from the result); the dims before the last
/// two are batch dims and broadcast.
struct ProductShapes {
  int64_t m, k, n;
  Shape aBatch, bBatch, batch, result;
};

ProductShapes productShapes(const Shape &a, const Shape &b);

/// NumPy matmul in f64 (long double sums).
Tensor refMatmul(const Tensor &a, const Tensor &b);

/// The transpose of a tensor: result dim d is x's dim perm[d].
Tensor refTranspose(const Tensor &x, const std::vector<int64_t> &perm);

/// f(a, b) with NumPy broadcasting, in f64.
Tensor refZip(const Tensor &a, const Tensor &b,
              const std::function<double(double, double)> &f);

Tensor refMap(const Tensor &x, const std::function<double(double)> &f);

/// ONNX Gemm: alpha * A' @ B' + beta * C, C broadcast to [M, N].
Tensor refGemm(const Tensor &a, const Tensor &b, const Tensor *c, double alpha,
               double beta, bool transA, bool transB);

/// ONNX Relu: max(x, 0), NaN stays NaN.
double relu(double x);
/// x * Phi(x), exactly with erf.
double geluErf(double x);
/// The tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
double geluTanh(double x);

//===----------------------------------------------------------------------===//
// Cases: a graph, its inputs, the reference and the expected program
//===----------------------------------------------------------------------===//
/// Library calls and kernels a program must have; -1: not checked.
struct Structure {
  int calls = -1, kernels = -1;
};

struct MatmulCase {
  std::string label;
  Graph graph;
  std::vector<Tensor> inputs;
  Tensor expected;          ///< F64, the graph's one output
  DType dtype = DType::F32; ///< what fusec must return
  int64_t k = 1;            ///< the contracted length, for the bound
  bool exact = false;
  Structure cpu, cuda;
};

/// A case under construction: inputs are registered with their tensors.
struct CaseBuilder {
  GraphBuilder b{"matmul"};
  MatmulCase c;
  std::mt19937_64 &rng;
  CaseBuilder(std::string label, DType dtype, std::mt19937_64 &rng) : rng(rng) {
    c.label = std::move(label) + " " + dtypeName(dtype);
    c.dtype = dtype;
  }
  std::string input(const std::string &name, Tensor value) {
    std::string v = b.input(name, value.dtype, value.shape);
    c.inputs.push_back(std::move(value));
    return v;
  }
  /// A uniform [-1, 1] input; `value` receives its tensor.
  std::string random(const std::string &name, const Shape &shape,
                     Tensor &value) {
    value = randomTensor(c.dtype, shape, rng, -1.0, 1.0);
    return input(name, value);
  }
  MatmulCase finish(const std::string &output, Tensor expected, int64_t k,
                    Structure cpu, Structure cuda) {
    b.output(output);
    c.graph = b.build();
    c.expected = std::move(expected);
    c.k = k;
    c.cpu = cpu;
    c.cuda = cuda;
    return std::move(c);
  }
};

std::string describeCoordinate(const Shape &shape, int64_t index);

/// Checks one output against its case; CHECK-level, so the other cases
/// still run.
void checkOutput(const Tensor &actual, const MatmulCase &c, double widening);

void checkStructure(const Program &program, const Structure &expected);

/// Many cases as one graph, so that one host compile covers all of them:
/// every value is renamed with its case's index.
MatmulCase mergeCases(const std::vector<MatmulCase> &cases,
                      std::vector<Tensor> &inputs);

/// Compiles `graph` on `target` and runs it; a failure fails the check.
std::optional<std::vector<Tensor>> compileAndRun(const Graph &graph,
                                                 const std::vector<Tensor> &in,
                                                 bool fuse, Target target);

/// Every case: its program's structure on both targets (lowering only),
/// then its numbers on `target`, fused (and unfused on the CPU). The cases
/// run merged into one graph; when that fails, one by one, so the failure
/// names its case.
void runCases(const std::vector<MatmulCase> &cases, Target target);

} // namespace fusec::test::matmul

#endif
