//===- ReductionCases.h - Reduction test cases against f64 -----*- C++ -*-===//
//
// What the reduction tests of every layer share: a case is a graph, its
// inputs and the f64 reference of each output (ReferenceOps.h), computed
// on the same (rounded) inputs; runCase compiles it fused and unfused and
// checks every output.
//
// Tolerances are explicit per dtype and grow with the reduction length n:
// accumulation error bounds scale with 1 + sqrt(n) times the magnitude of
// what was summed; max/min (which return one of their inputs) and integers
// (which wrap like their dtype) are exact. Unfused 16-bit float graphs round
// every intermediate to 16 bits, so their bounds are widened (5x, and at
// least fusec's toleranceFor) -- fused kernels, which compute in f32, get
// the tight ones.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_SUPPORT_REDUCTIONCASES_H
#define FUSEC_TEST_UNIT_SUPPORT_REDUCTIONCASES_H

#include "test/unit/ReferenceOps.h"
#include "test/unit/TestUtil.h"

#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

/// One CPU test case and one [gpu] test case running `body(target)`.
#define REDUCTION_TARGET_TEST(name, body)                                      \
  TEST_CASE(name, "[reduction]") { body(Target::Cpu); }                        \
  TEST_CASE(name " on the GPU", "[reduction][gpu]") {                          \
    FUSEC_SKIP_IF(cuda::unavailableReason());                                  \
    body(Target::Cuda);                                                        \
  }

namespace fusec::test::reduction {

using Attrs = std::map<std::string, AttrValue>;
using Axes = std::optional<std::vector<int64_t>>;

/// Axes given explicitly (A({}) is an empty list, unlike std::nullopt).
Axes A(std::vector<int64_t> axes);

inline const double kInf = std::numeric_limits<double>::infinity();
inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

//===----------------------------------------------------------------------===//
// Tolerances
//===----------------------------------------------------------------------===//
/// |actual - expected| <= atol + rtol * |expected| + scaleTol * scale[i]
/// (scale: a per-element magnitude, e.g. sqrt(sum x^2) of a sum's group).
struct Bound {
  double atol = 0, rtol = 0, scaleTol = 0;
  bool exact() const { return atol == 0 && rtol == 0 && scaleTol == 0; }
};

/// Relative rounding of a result stored in `dtype` (plus a few ulps of f32
/// math for f32).
double outRtol(DType dtype);

/// Accumulation error of a length-n reduction, relative to the magnitude of
/// what it sums (f16/bf16 accumulate in f32).
double accTol(DType dtype, int64_t n);

/// Absolute slack of pointwise math near zero (cancellation in 1 + erf(x)
/// for x << 0 and the like), and half an f16 subnormal step.
double pointwiseAtol(DType dtype);
double subnormalAtol(DType dtype);

Bound widenForUnfused(Bound bound, DType dtype);

//===----------------------------------------------------------------------===//
// Cases: a graph, its inputs, and the reference for each output
//===----------------------------------------------------------------------===//
struct Expectation {
  std::string label;
  /// F64 for float outputs, the output dtype for ints (compared exactly).
  Tensor expected;
  DType dtype; ///< what fusec must return
  Bound bound;
  std::optional<Tensor> scale; ///< per element, for Bound::scaleTol
};

struct Case {
  std::string label;
  Graph graph;
  std::vector<Tensor> inputs;
  std::vector<Expectation> expected; ///< in graph output order
};

/// A case under construction: inputs are registered with their tensors.
struct CaseBuilder {
  GraphBuilder b;
  Case c;
  explicit CaseBuilder(const std::string &label) : b("reduction") {
    c.label = label;
  }
  std::string input(const std::string &name, Tensor value) {
    std::string v = b.input(name, value.dtype, value.shape);
    c.inputs.push_back(std::move(value));
    return v;
  }
  void output(const std::string &value, const std::string &label,
              Tensor expected, DType dtype, Bound bound,
              std::optional<Tensor> scale = std::nullopt) {
    b.output(value);
    c.expected.push_back(
        {label, std::move(expected), dtype, bound, std::move(scale)});
  }
  Case finish() {
    c.graph = b.build();
    return std::move(c);
  }
};

/// Many cases as one graph, so that one host compile (and one NVRTC
/// compile per architecture) covers all of them: every value is renamed
/// with its case's index, outputs keep their case's label.
Case mergeCases(std::vector<Case> cases, const std::string &label);

std::string describeIndex(const Shape &shape, int64_t index);

/// Checks one output against its expectation; CHECK-level, so the other
/// outputs and cases still run.
void checkOutput(const Tensor &actual, const Expectation &e,
                 const Bound &bound);

/// GPU compile-test of the CUDA source (a no-op without NVRTC), fenced so
/// that a lowering error fails the check instead of the whole test case.
void compileForGpusChecked(const Graph &graph);

/// Runs `c` fused and (unless `unfusedToo` is false) unfused on `target` and
/// checks every output. Returns the fused outputs (empty on failure).
std::vector<Tensor> runCase(const Case &c, Target target,
                            bool unfusedToo = true);

Tensor random(DType dtype, const Shape &shape, std::mt19937_64 &rng, double low,
              double high);

/// Rows of the tensor set from a list (row-major, the last dim is a row).
Tensor fromValues(DType dtype, const Shape &shape,
                  const std::vector<double> &values);

Attrs reduceAttrs(const Axes &axes, bool keepdims, bool noop = false);

/// Number of input elements per output element of the reduction.
int64_t reductionLength(const Shape &shape, const Axes &axes, bool noop);

/// The reference's reduction with the bound that fits it: max/min and ints
/// exact, sums bounded relative to sqrt(sum x^2) of their group.
Expectation reductionExpectation(ref::ReduceKind kind, const Tensor &x,
                                 const Axes &axes, bool keepdims, bool noop);

/// Adds `op` on `value` (whose tensor is `x`) as an output of `cb`.
void addReduction(CaseBuilder &cb, ref::ReduceKind kind,
                  const std::string &value, const Tensor &x, const Axes &axes,
                  bool keepdims, bool noop = false);

Bound softmaxBound(DType dtype, int64_t n);
Bound logSoftmaxBound(DType dtype, int64_t n);
Bound normBound(DType dtype, int64_t n);
Bound pointwiseBound(DType dtype);

/// Scalar functions for ref::map and ref::zip.
double addF(double a, double b);
double subF(double a, double b);
double mulF(double a, double b);
double divF(double a, double b);
double expF(double a);
double logF(double a);
double sqrtF(double a);

} // namespace fusec::test::reduction

#endif
