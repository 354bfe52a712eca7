//===- MatmulTest.cpp - matmul and gemm graphs against f64 ---------------===//
//
// `matmul` (ONNX MatMul, NumPy's matmul) and `gemm` (ONNX Gemm) built as
// graphs, compiled with the public API, run on seeded uniform [-1, 1] inputs
// and compared with the plain f64 loops below (an independent reference: it
// shares no code with the compiler). Next to the numbers, each case states
// the program it expects: how many library calls and kernels, on the CPU
// target and on the CUDA target (lowered here even without a GPU, since
// lowering needs neither the device nor NVRTC).
//
// Every check is a function of the Target: the CPU test cases and the [gpu]
// ones run the same code.
//
//===----------------------------------------------------------------------===//

#include "ReferenceOps.h"
#include "TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace fusec;
using Catch::Matchers::Contains;

namespace {

using Attrs = std::map<std::string, AttrValue>;

const DType kFloatTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16};
const double kNaN = std::numeric_limits<double>::quiet_NaN();

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
double dtypeCoefficient(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return 1e-13;
  case DType::F32:
    return 2e-6;
  case DType::F16:
    return 2e-3;
  case DType::BF16:
    return 1.6e-2;
  default:
    return 0;
  }
}

/// One unit in the last place of `dtype` at |x| (its smallest subnormal at
/// 0).
double ulpAt(DType dtype, double x) {
  int mantissa = 52, minExponent = -1074;
  switch (dtype) {
  case DType::F32:
    mantissa = 23, minExponent = -149;
    break;
  case DType::F16:
    mantissa = 10, minExponent = -24;
    break;
  case DType::BF16:
    mantissa = 7, minExponent = -133;
    break;
  default:
    break;
  }
  double smallest = std::ldexp(1.0, minExponent);
  if (!std::isfinite(x) || x == 0)
    return smallest;
  int exponent = 0;
  std::frexp(std::fabs(x), &exponent); // |x| = f * 2^exponent, f in [0.5, 1)
  return std::max(std::ldexp(1.0, exponent - 1 - mantissa), smallest);
}

/// Unfused 16-bit graphs round every intermediate (a decomposed gelu is
/// half a dozen ops): their bound is 5x wider.
double unfusedWidening(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 ? 5.0 : 1.0;
}

//===----------------------------------------------------------------------===//
// The f64 reference
//===----------------------------------------------------------------------===//

/// `t` read as doubles into a new F64 tensor.
Tensor toF64(const Tensor &t) {
  Tensor out(DType::F64, t.shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.set(i, t.at(i));
  return out;
}

/// The row-major linear index of `coordinate` (right-aligned with `shape`)
/// in a tensor of `shape` broadcast to it: dims of 1 repeat.
int64_t broadcastIndex(const Shape &shape, const Shape &coordinate) {
  size_t offset = coordinate.size() - shape.size();
  int64_t index = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    index = index * shape[d] + (shape[d] == 1 ? 0 : coordinate[offset + d]);
  return index;
}

/// The coordinate of linear `index` in `shape`.
Shape coordinateOf(const Shape &shape, int64_t index) {
  Shape coordinate(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coordinate[d] = shape[d] ? index % shape[d] : 0;
    index = shape[d] ? index / shape[d] : 0;
  }
  return coordinate;
}

/// NumPy matmul's shapes: a 1-D lhs is a row and a 1-D rhs a column
/// (their unit dims are dropped from the result); the dims before the last
/// two are batch dims and broadcast.
struct ProductShapes {
  int64_t m, k, n;
  Shape aBatch, bBatch, batch, result;
};

ProductShapes productShapes(const Shape &a, const Shape &b) {
  REQUIRE(!a.empty());
  REQUIRE(!b.empty());
  Shape as = a, bs = b;
  if (a.size() == 1)
    as.insert(as.begin(), 1);
  if (b.size() == 1)
    bs.push_back(1);
  ProductShapes shapes;
  shapes.m = as[as.size() - 2], shapes.k = as.back(), shapes.n = bs.back();
  REQUIRE(bs[bs.size() - 2] == shapes.k);
  shapes.aBatch = Shape(as.begin(), as.end() - 2);
  shapes.bBatch = Shape(bs.begin(), bs.end() - 2);
  shapes.batch = ref::broadcastPair(shapes.aBatch, shapes.bBatch);
  shapes.result = shapes.batch;
  if (a.size() > 1)
    shapes.result.push_back(shapes.m);
  if (b.size() > 1)
    shapes.result.push_back(shapes.n);
  return shapes;
}

/// NumPy matmul in f64 (long double sums).
Tensor refMatmul(const Tensor &a, const Tensor &b) {
  ProductShapes shapes = productShapes(a.shape, b.shape);
  const int64_t m = shapes.m, k = shapes.k, n = shapes.n;
  Tensor out(DType::F64, shapes.result);
  int64_t batches = numElements(shapes.batch);
  for (int64_t p = 0; p < batches; ++p) {
    Shape coordinate = coordinateOf(shapes.batch, p);
    const int64_t aBase = broadcastIndex(shapes.aBatch, coordinate) * m * k;
    const int64_t bBase = broadcastIndex(shapes.bBatch, coordinate) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        long double sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum += static_cast<long double>(a.at(aBase + i * k + l)) *
                 b.at(bBase + l * n + j);
        out.set((p * m + i) * n + j, static_cast<double>(sum));
      }
  }
  return out;
}

/// The transpose of a tensor: result dim d is x's dim perm[d].
Tensor refTranspose(const Tensor &x, const std::vector<int64_t> &perm) {
  Shape shape(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    shape[d] = x.shape[perm[d]];
  Tensor out(DType::F64, shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape coordinate = coordinateOf(shape, i), source(perm.size());
    for (size_t d = 0; d < perm.size(); ++d)
      source[perm[d]] = coordinate[d];
    out.set(i, x.at(broadcastIndex(x.shape, source)));
  }
  return out;
}

/// f(a, b) with NumPy broadcasting, in f64.
Tensor refZip(const Tensor &a, const Tensor &b,
              const std::function<double(double, double)> &f) {
  Shape shape = ref::broadcastPair(a.shape, b.shape);
  Tensor out(DType::F64, shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    Shape coordinate = coordinateOf(shape, i);
    out.set(i, f(a.at(broadcastIndex(a.shape, coordinate)),
                 b.at(broadcastIndex(b.shape, coordinate))));
  }
  return out;
}

Tensor refMap(const Tensor &x, const std::function<double(double)> &f) {
  Tensor out(DType::F64, x.shape);
  for (int64_t i = 0; i < x.numElements(); ++i)
    out.set(i, f(x.at(i)));
  return out;
}

/// ONNX Gemm: alpha * A' @ B' + beta * C, C broadcast to [M, N].
Tensor refGemm(const Tensor &a, const Tensor &b, const Tensor *c, double alpha,
               double beta, bool transA, bool transB) {
  Tensor product = refMatmul(transA ? refTranspose(a, {1, 0}) : toF64(a),
                             transB ? refTranspose(b, {1, 0}) : toF64(b));
  Tensor scaled = refMap(product, [&](double x) { return alpha * x; });
  if (!c)
    return scaled;
  return refZip(scaled, *c, [&](double x, double y) { return x + beta * y; });
}

/// ONNX Relu: max(x, 0), NaN stays NaN.
double relu(double x) { return std::isnan(x) ? x : (x < 0 ? 0.0 : x); }
/// x * Phi(x), exactly with erf.
double geluErf(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
/// The tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
double geluTanh(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
}

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

std::string describeCoordinate(const Shape &shape, int64_t index) {
  std::ostringstream os;
  os << index << " [";
  Shape coordinate = coordinateOf(shape, index);
  for (size_t d = 0; d < coordinate.size(); ++d)
    os << (d ? "," : "") << coordinate[d];
  os << "]";
  return os.str();
}

/// Checks one output against its case; CHECK-level, so the other cases
/// still run.
void checkOutput(const Tensor &actual, const MatmulCase &c, double widening) {
  INFO("output of '" << c.label << "': expected " << dtypeName(c.dtype) << "["
                     << formatShape(c.expected.shape) << "], got "
                     << actual.typeString());
  CHECK(actual.dtype == c.dtype);
  CHECK(actual.shape == c.expected.shape);
  if (actual.dtype != c.dtype || actual.shape != c.expected.shape)
    return;
  double tol = widening * dtypeCoefficient(c.dtype) *
               std::sqrt(static_cast<double>(std::max<int64_t>(c.k, 1)));
  Tensor rounded(c.dtype, c.expected.shape);
  int64_t mismatches = 0, first = -1, worst = -1;
  double worstRatio = 0;
  for (int64_t i = 0; i < actual.numElements(); ++i) {
    rounded.set(i, c.expected.at(i));
    double a = actual.at(i), x = rounded.at(i);
    if ((std::isnan(a) && std::isnan(x)) || a == x)
      continue;
    double allowed =
        c.exact ? 0.0 : tol * (1 + std::fabs(x)) + ulpAt(c.dtype, x);
    double error = std::fabs(a - x);
    bool ok = std::isfinite(a) && std::isfinite(x) && error <= allowed;
    double ratio = ok ? error / allowed : std::numeric_limits<double>::max();
    if (!ok && mismatches++ == 0)
      first = i;
    if (worst < 0 || ratio > worstRatio) {
      worstRatio = ratio;
      worst = i;
    }
  }
  std::ostringstream message;
  message.precision(10);
  message << mismatches << " of " << actual.numElements()
          << " elements outside the bound (c*sqrt(k) = " << tol
          << (c.exact ? ", exact" : "") << ")";
  auto describe = [&](int64_t i) {
    message << " at element " << describeCoordinate(actual.shape, i) << ": got "
            << actual.at(i) << ", expected " << c.expected.at(i) << " (rounded "
            << rounded.at(i) << ")";
  };
  if (first >= 0) {
    message << "; first";
    describe(first);
  }
  if (worst >= 0) {
    message << "; worst error/allowed " << worstRatio;
    describe(worst);
  }
  INFO(message.str());
  CHECK(mismatches == 0);
}

void checkStructure(const Program &program, const Structure &expected) {
  INFO("program for " << targetName(program.target) << ": "
                      << program.matmuls.size() << " library calls, "
                      << program.kernels.size() << " kernels");
  if (expected.calls >= 0)
    CHECK(program.matmuls.size() == static_cast<size_t>(expected.calls));
  if (expected.kernels >= 0)
    CHECK(program.kernels.size() == static_cast<size_t>(expected.kernels));
}

/// Many cases as one graph, so that one host compile covers all of them:
/// every value is renamed with its case's index.
MatmulCase mergeCases(const std::vector<MatmulCase> &cases,
                      std::vector<Tensor> &inputs) {
  MatmulCase merged;
  merged.graph.name = "matmul";
  for (size_t i = 0; i < cases.size(); ++i) {
    const MatmulCase &c = cases[i];
    test::appendRenamedGraph(merged.graph, c.graph,
                             "c" + std::to_string(i) + "_");
    inputs.insert(inputs.end(), c.inputs.begin(), c.inputs.end());
  }
  return merged;
}

/// Compiles `graph` on `target` and runs it; a failure fails the check.
std::optional<std::vector<Tensor>> compileAndRun(const Graph &graph,
                                                 const std::vector<Tensor> &in,
                                                 bool fuse, Target target) {
  try {
    CompiledModel model = compile(graph, test::testOptions(fuse, target));
    return model.run(in);
  } catch (const std::exception &error) {
    FAIL_CHECK("compile/run threw: " << error.what());
    return std::nullopt;
  }
}

/// Every case: its program's structure on both targets (lowering only),
/// then its numbers on `target`, fused (and unfused on the CPU). The cases
/// run merged into one graph; when that fails, one by one, so the failure
/// names its case.
void runCases(const std::vector<MatmulCase> &cases, Target target) {
  for (const MatmulCase &c : cases) {
    INFO("case: " << c.label);
    for (Target lowered : {Target::Cpu, Target::Cuda}) {
      try {
        checkStructure(
            lowerGraph(c.graph, test::testOptions(true, lowered)).program,
            lowered == Target::Cpu ? c.cpu : c.cuda);
      } catch (const std::exception &error) {
        FAIL_CHECK("lowering for " << targetName(lowered)
                                   << " threw: " << error.what());
      }
    }
  }
  std::vector<Tensor> inputs;
  MatmulCase merged = mergeCases(cases, inputs);
  if (target == Target::Cpu) {
    try {
      test::compileForGpus(merged.graph, /*everyVariant=*/false);
    } catch (const std::exception &error) {
      FAIL_CHECK("lowering for CUDA threw: " << error.what());
    }
  }
  for (bool fuse : {true, false}) {
    // On the GPU the calls and fused kernels are the subject.
    if (!fuse && target == Target::Cuda)
      continue;
    INFO((fuse ? "fused" : "unfused") << " on " << targetName(target));
    std::optional<std::vector<Tensor>> outputs;
    {
      INFO("all " << cases.size() << " cases merged into one graph");
      outputs = compileAndRun(merged.graph, inputs, fuse, target);
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      const MatmulCase &c = cases[i];
      INFO("case: " << c.label);
      std::optional<Tensor> output;
      if (outputs && outputs->size() == cases.size()) {
        output = (*outputs)[i];
      } else {
        std::optional<std::vector<Tensor>> alone =
            compileAndRun(c.graph, c.inputs, fuse, target);
        if (alone && alone->size() == 1)
          output = (*alone)[0];
      }
      if (output)
        checkOutput(*output, c, fuse ? 1.0 : unfusedWidening(c.dtype));
    }
  }
}

//===----------------------------------------------------------------------===//
// Shapes: NumPy matmul on every float dtype
//===----------------------------------------------------------------------===//

struct ShapeCase {
  const char *label;
  Shape a, b;
  /// The expected program (the same on both targets): -1 unchecked.
  int calls, kernels;
};

const ShapeCase kShapeCases[] = {
    {"1x1 @ 1x1", {1, 1}, {1, 1}, 1, 0},
    {"row times column 1x5 @ 5x1", {1, 5}, {5, 1}, 1, 0},
    {"outer product 7x1 @ 1x13", {7, 1}, {1, 13}, 1, 0},
    {"odd sizes 7x29 @ 29x13", {7, 29}, {29, 13}, 1, 0},
    {"long k 16x2500 @ 2500x24", {16, 2500}, {2500, 24}, 1, 0},
    {"blocked 64x96 @ 96x80", {64, 96}, {96, 80}, 1, 0},
    {"vector @ matrix 29 @ 29x13", {29}, {29, 13}, 1, 0},
    {"matrix @ vector 7x29 @ 29", {7, 29}, {29}, 1, 0},
    {"vector @ vector 29 @ 29 (rank 0)", {29}, {29}, 1, 0},
    {"batch folded into rows 3x7x29 @ 29x13", {3, 7, 29}, {29, 13}, 1, 0},
    {"batched 3x7x29 @ 3x29x13", {3, 7, 29}, {3, 29, 13}, 1, 0},
    {"batched lhs @ vector 3x7x29 @ 29", {3, 7, 29}, {29}, 1, 0},
    {"vector @ batched rhs 29 @ 3x29x13", {29}, {3, 29, 13}, 1, 0},
    {"matrix @ batched rhs 7x29 @ 3x29x13", {7, 29}, {3, 29, 13}, 1, 0},
    // The call strides over a batch that is whole or all ones: both
    // operands are broadcast to batch [2, 3] by a kernel each.
    {"batch broadcast 2x1x7x29 @ 3x29x13", {2, 1, 7, 29}, {3, 29, 13}, 1, 2},
    {"unit batch 1x7x29 @ 1x29x13", {1, 7, 29}, {1, 29, 13}, 1, 0},
    {"k of zero 7x0 @ 0x13 (zeros)", {7, 0}, {0, 13}, 1, 0},
    {"m of zero 0x29 @ 29x13 (empty)", {0, 29}, {29, 13}, 1, 0},
    {"n of zero 7x29 @ 29x0 (empty)", {7, 29}, {29, 0}, 1, 0},
    {"batch of zero 0x7x29 @ 29x13 (empty)", {0, 7, 29}, {29, 13}, 1, 0},
    {"rhs batch of zero 7x29 @ 0x29x13 (empty)", {7, 29}, {0, 29, 13}, 1, 0},
};

void checkShapes(DType dtype, Target target) {
  std::mt19937_64 rng(1000 + static_cast<int>(dtype));
  std::vector<MatmulCase> cases;
  for (const ShapeCase &s : kShapeCases) {
    CaseBuilder cb(s.label, dtype, rng);
    Tensor a, b;
    std::string x = cb.random("a", s.a, a);
    std::string y = cb.random("b", s.b, b);
    int64_t k = s.a.back();
    Structure structure{s.calls, s.kernels};
    MatmulCase c = cb.finish(cb.b.op("matmul", {x, y}), refMatmul(a, b), k,
                             structure, structure);
    c.exact = k == 0; // an empty sum is exactly 0
    cases.push_back(std::move(c));
  }
  runCases(cases, target);
}

//===----------------------------------------------------------------------===//
// Gemm: transposes, alpha, beta and C
//===----------------------------------------------------------------------===//

/// Every transA/transB of a gemm without C, with the attributes left at
/// their defaults: C as "" (`emptyName`) or only two inputs.
void addGemmWithoutC(std::vector<MatmulCase> &cases, DType dtype,
                     std::mt19937_64 &rng, bool emptyName) {
  const int64_t m = 7, n = 13, k = 29;
  for (int transA : {0, 1})
    for (int transB : {0, 1}) {
      std::string label = "gemm transA " + std::to_string(transA) + " transB " +
                          std::to_string(transB) +
                          (emptyName ? " C given as empty name" : " no C");
      CaseBuilder cb(label, dtype, rng);
      Tensor a, b;
      std::string va = cb.random("a", transA ? Shape{k, m} : Shape{m, k}, a);
      std::string vb = cb.random("b", transB ? Shape{n, k} : Shape{k, n}, b);
      Attrs attrs;
      if (transA)
        attrs["transA"] = int64_t(1);
      if (transB)
        attrs["transB"] = int64_t(1);
      std::vector<std::string> inputs = {va, vb};
      if (emptyName)
        inputs.push_back("");
      std::string out = cb.b.op("gemm", inputs, attrs);
      cases.push_back(cb.finish(out,
                                refGemm(a, b, nullptr, 1, 1, transA, transB), k,
                                {1, 0}, {1, 0}));
    }
}

/// A gemm node with two inputs (C absent: ONNX's optional third input).
void checkGemmWithoutC(DType dtype, Target target) {
  std::mt19937_64 rng(2500 + static_cast<int>(dtype));
  std::vector<MatmulCase> cases;
  addGemmWithoutC(cases, dtype, rng, /*emptyName=*/false);
  runCases(cases, target);
}

void checkGemm(DType dtype, Target target) {
  std::mt19937_64 rng(2000 + static_cast<int>(dtype));
  const int64_t m = 7, n = 13, k = 29;
  bool epilogues = dtype != DType::F64; // cuBLASLt: no f64 epilogues
  std::vector<MatmulCase> cases;
  // Every transA/transB with alpha and beta != 1 and a full C.
  for (int transA : {0, 1})
    for (int transB : {0, 1}) {
      std::string label = "gemm transA " + std::to_string(transA) + " transB " +
                          std::to_string(transB) + " alpha 1.5 beta -0.5 C MxN";
      CaseBuilder cb(label, dtype, rng);
      Tensor a, b, c;
      std::string va = cb.random("a", transA ? Shape{k, m} : Shape{m, k}, a);
      std::string vb = cb.random("b", transB ? Shape{n, k} : Shape{k, n}, b);
      std::string vc = cb.random("c", {m, n}, c);
      std::string out = cb.b.op("gemm", {va, vb, vc},
                                {{"alpha", 1.5},
                                 {"beta", -0.5},
                                 {"transA", int64_t(transA)},
                                 {"transB", int64_t(transB)}});
      cases.push_back(cb.finish(out,
                                refGemm(a, b, &c, 1.5, -0.5, transA, transB), k,
                                {1, 1}, {1, 1}));
    }
  // Every transA/transB without C (given as "", the optional input left
  // out; see checkGemmWithoutC for two inputs), attributes at defaults.
  addGemmWithoutC(cases, dtype, rng, /*emptyName=*/true);
  // C of each shape that broadcasts to [M, N]. With beta != 1, beta * C is
  // computed on C's own shape, in a kernel of its own when C is smaller
  // than [M, N] (fusion does not recompute it per element of the add).
  struct CShape {
    const char *label;
    Shape shape;
    double alpha, beta;
    int cpuKernels;
    /// CUDA: a C of N elements is the call's bias (not for f64).
    int cudaKernels;
  };
  const CShape cShapes[] = {
      {"C N beta 1", {n}, 1.0, 1.0, 1, epilogues ? 0 : 1},
      {"C N alpha -2 beta 0.25", {n}, -2.0, 0.25, 2, epilogues ? 1 : 2},
      {"C 1xN alpha 0.5", {1, n}, 0.5, 1.0, 1, epilogues ? 0 : 1},
      {"C Mx1 alpha 0.5 beta 2", {m, 1}, 0.5, 2.0, 2, 2},
      {"C MxN beta 0", {m, n}, 1.0, 0.0, 0, 0}, // C left out
      {"C 1 alpha 2 beta -1", {1}, 2.0, -1.0, 2, 2},
      {"C scalar beta 3", {}, 1.0, 3.0, 2, 2},
      {"C Mx1 beta 1", {m, 1}, 1.0, 1.0, 1, 1},
  };
  for (const CShape &cs : cShapes) {
    CaseBuilder cb(std::string("gemm transB 1 ") + cs.label, dtype, rng);
    Tensor a, b, c;
    std::string va = cb.random("a", {m, k}, a);
    std::string vb = cb.random("b", {n, k}, b);
    std::string vc = cb.random("c", cs.shape, c);
    std::string out = cb.b.op(
        "gemm", {va, vb, vc},
        {{"alpha", cs.alpha}, {"beta", cs.beta}, {"transB", int64_t(1)}});
    cases.push_back(cb.finish(out,
                              refGemm(a, b, &c, cs.alpha, cs.beta, false, true),
                              k, {1, cs.cpuKernels}, {1, cs.cudaKernels}));
  }
  runCases(cases, target);
}

//===----------------------------------------------------------------------===//
// Ops after the call: bias, relu, gelu, scale
//===----------------------------------------------------------------------===//

enum class Tail {
  Bias,
  BiasRelu,
  BiasGeluTanh,
  BiasGeluErf,
  Relu,
  GeluTanh,
  Scale,
  ScaleBiasRelu,
  BiasFirstRelu,
  RowBiasGeluTanh,
  GemmRelu,
};

struct TailCase {
  const char *label;
  Tail tail;
  Shape a, b;
  /// Bias and activations fold into cuBLASLt calls of one product only.
  bool oneProduct;
};

const TailCase kTailCases[] = {
    {"matmul + bias", Tail::Bias, {33, 70}, {70, 45}, true},
    {"matmul + bias -> relu", Tail::BiasRelu, {33, 70}, {70, 45}, true},
    {"matmul + bias -> gelu tanh",
     Tail::BiasGeluTanh,
     {33, 70},
     {70, 45},
     true},
    {"matmul + bias -> gelu erf", Tail::BiasGeluErf, {33, 70}, {70, 45}, true},
    {"matmul -> relu", Tail::Relu, {33, 70}, {70, 45}, true},
    {"matmul -> gelu tanh", Tail::GeluTanh, {33, 70}, {70, 45}, true},
    {"matmul * scalar", Tail::Scale, {33, 70}, {70, 45}, true},
    {"matmul * scalar + bias -> relu",
     Tail::ScaleBiasRelu,
     {33, 70},
     {70, 45},
     true},
    {"bias + matmul -> relu", Tail::BiasFirstRelu, {33, 70}, {70, 45}, true},
    {"matmul + bias 1xN -> gelu tanh",
     Tail::RowBiasGeluTanh,
     {33, 70},
     {70, 45},
     true},
    {"3-D @ 2-D + bias -> gelu tanh",
     Tail::BiasGeluTanh,
     {2, 5, 70},
     {70, 45},
     true},
    {"3-D @ 3-D + bias -> relu",
     Tail::BiasRelu,
     {2, 5, 70},
     {2, 70, 45},
     false},
    {"3-D @ 3-D * scalar", Tail::Scale, {2, 5, 70}, {2, 70, 45}, false},
    {"vector @ matrix + bias -> relu", Tail::BiasRelu, {70}, {70, 45}, true},
    // The result [33] is 33 rows of n = 1: its bias is no vector of n.
    {"matrix @ vector + bias -> relu", Tail::BiasRelu, {33, 70}, {70}, true},
    {"gemm alpha 0.5 transB with C N -> relu",
     Tail::GemmRelu,
     {33, 70},
     {45, 70},
     true},
    {"3-D @ 2-D * scalar + bias -> relu",
     Tail::ScaleBiasRelu,
     {2, 5, 70},
     {70, 45},
     true},
};

void checkTails(DType dtype, Target target) {
  std::mt19937_64 rng(3000 + static_cast<int>(dtype));
  const double scale = -0.75; // exact in every float dtype
  std::vector<MatmulCase> cases;
  for (const TailCase &t : kTailCases) {
    CaseBuilder cb(t.label, dtype, rng);
    Tensor a, b, bias;
    std::string va = cb.random("a", t.a, a);
    std::string vb = cb.random("b", t.b, b);
    int64_t n = t.tail == Tail::GemmRelu ? t.b[0] : t.b.back();
    // A bias of the result's last dim; the call's n when the rhs is a
    // matrix (a 1-D rhs makes n 1 and the last dim m).
    bool biasIsN = t.b.size() > 1;
    std::string value;
    Tensor expected;
    if (t.tail == Tail::GemmRelu) {
      // ONNX Gemm with C of N: C is the call's bias on the CUDA target.
      Tensor c;
      std::string vc = cb.random("c", {n}, c);
      value = cb.b.op("gemm", {va, vb, vc},
                      {{"alpha", 0.5}, {"transB", int64_t(1)}});
      expected = refGemm(a, b, &c, 0.5, 1.0, false, true);
    } else {
      value = cb.b.op("matmul", {va, vb});
      expected = refMatmul(a, b);
    }
    bool hasBias = false, hasActivation = true, erf = false;
    auto addBias = [&](const Shape &shape, bool first) {
      Shape biasShape = shape;
      biasShape.back() = expected.shape.back();
      std::string vbias = cb.random("bias", biasShape, bias);
      value = first ? cb.b.op("add", {vbias, value})
                    : cb.b.op("add", {value, vbias});
      expected =
          refZip(expected, bias, [](double x, double y) { return x + y; });
      hasBias = true;
    };
    auto activate = [&](const char *op, double (*f)(double),
                        const char *approximate = nullptr) {
      Attrs attrs;
      if (approximate)
        attrs["approximate"] = std::string(approximate);
      value = cb.b.op(op, {value}, attrs);
      expected = refMap(expected, f);
    };
    auto scaleBy = [&] {
      value = cb.b.op("mul", {value, cb.b.scalar(scale, dtype)});
      expected = refMap(expected, [&](double x) { return scale * x; });
    };
    switch (t.tail) {
    case Tail::Bias:
      addBias({n}, false);
      hasActivation = false;
      break;
    case Tail::BiasRelu:
      addBias({n}, false);
      activate("relu", relu);
      break;
    case Tail::BiasGeluTanh:
      addBias({n}, false);
      activate("gelu", geluTanh, "tanh");
      break;
    case Tail::BiasGeluErf:
      addBias({n}, false);
      activate("gelu", geluErf, "none");
      erf = true;
      break;
    case Tail::Relu:
      activate("relu", relu);
      break;
    case Tail::GeluTanh:
      activate("gelu", geluTanh, "tanh");
      break;
    case Tail::Scale:
      scaleBy();
      hasActivation = false;
      break;
    case Tail::ScaleBiasRelu:
      scaleBy();
      addBias({n}, false);
      activate("relu", relu);
      break;
    case Tail::BiasFirstRelu:
      addBias({n}, true);
      activate("relu", relu);
      break;
    case Tail::RowBiasGeluTanh:
      addBias({1, n}, false);
      activate("gelu", geluTanh, "tanh");
      break;
    case Tail::GemmRelu:
      hasBias = true;
      activate("relu", relu);
      break;
    }
    bool tailRunsAfter = hasBias || hasActivation;
    // CPU: the call, then one fused kernel for whatever follows it (a scale
    // is the call's alpha).
    Structure cpu{1, tailRunsAfter ? 1 : 0};
    // CUDA: bias, relu and gelu tanh are cuBLASLt's epilogue when the call
    // is one product and not f64; exact gelu runs in a kernel.
    bool folds = t.oneProduct && dtype != DType::F64 && (biasIsN || !hasBias);
    Structure cuda{1, !tailRunsAfter ? 0 : (folds && !erf) ? 0 : 1};
    cases.push_back(
        cb.finish(value, std::move(expected), t.a.back(), cpu, cuda));
  }
  runCases(cases, target);
}

//===----------------------------------------------------------------------===//
// Transposes feeding the call
//===----------------------------------------------------------------------===//

void checkTransposes(DType dtype, Target target) {
  std::mt19937_64 rng(4000 + static_cast<int>(dtype));
  std::vector<MatmulCase> cases;
  auto transposed = [](CaseBuilder &cb, const std::string &value,
                       std::vector<int64_t> perm) {
    return cb.b.op("transpose", {value}, {{"perm", std::move(perm)}});
  };
  {
    // The linear layer: x @ w^T with w stored [out, in].
    CaseBuilder cb("x @ transpose(w) perm [1 0]", dtype, rng);
    Tensor x, w;
    std::string vx = cb.random("x", {9, 31}, x);
    std::string vw = cb.random("w", {17, 31}, w);
    std::string out = cb.b.op("matmul", {vx, transposed(cb, vw, {1, 0})});
    cases.push_back(cb.finish(out, refMatmul(x, refTranspose(w, {1, 0})), 31,
                              {1, 0}, {1, 0}));
  }
  {
    CaseBuilder cb("transpose(a) perm [1 0] @ b", dtype, rng);
    Tensor a, b;
    std::string va = cb.random("a", {31, 9}, a);
    std::string vb = cb.random("b", {31, 17}, b);
    std::string out = cb.b.op("matmul", {transposed(cb, va, {1, 0}), vb});
    cases.push_back(cb.finish(out, refMatmul(refTranspose(a, {1, 0}), b), 31,
                              {1, 0}, {1, 0}));
  }
  {
    CaseBuilder cb("transpose(a) @ transpose(b) both perm [1 0]", dtype, rng);
    Tensor a, b;
    std::string va = cb.random("a", {31, 9}, a);
    std::string vb = cb.random("b", {17, 31}, b);
    std::string out = cb.b.op(
        "matmul", {transposed(cb, va, {1, 0}), transposed(cb, vb, {1, 0})});
    cases.push_back(cb.finish(
        out, refMatmul(refTranspose(a, {1, 0}), refTranspose(b, {1, 0})), 31,
        {1, 0}, {1, 0}));
  }
  {
    CaseBuilder cb("batched x @ transpose(w) perm [0 2 1]", dtype, rng);
    Tensor x, w;
    std::string vx = cb.random("x", {3, 9, 31}, x);
    std::string vw = cb.random("w", {3, 17, 31}, w);
    std::string out = cb.b.op("matmul", {vx, transposed(cb, vw, {0, 2, 1})});
    cases.push_back(cb.finish(out, refMatmul(x, refTranspose(w, {0, 2, 1})), 31,
                              {1, 0}, {1, 0}));
  }
  {
    CaseBuilder cb("batched transpose(a) perm [0 2 1] @ 2-D b", dtype, rng);
    Tensor a, b;
    std::string va = cb.random("a", {3, 31, 9}, a);
    std::string vb = cb.random("b", {31, 17}, b);
    std::string out = cb.b.op("matmul", {transposed(cb, va, {0, 2, 1}), vb});
    cases.push_back(cb.finish(out, refMatmul(refTranspose(a, {0, 2, 1}), b), 31,
                              {1, 0}, {1, 0}));
  }
  {
    // A permutation that is not of the last two dims stays a kernel.
    CaseBuilder cb("transpose(a) perm [1 0 2] @ b (a kernel)", dtype, rng);
    Tensor a, b;
    std::string va = cb.random("a", {9, 3, 31}, a);
    std::string vb = cb.random("b", {31, 17}, b);
    std::string out = cb.b.op("matmul", {transposed(cb, va, {1, 0, 2}), vb});
    cases.push_back(cb.finish(out, refMatmul(refTranspose(a, {1, 0, 2}), b), 31,
                              {1, 1}, {1, 1}));
  }
  {
    // The transposed value also feeds an add: the transpose stays for it,
    // the call still reads w directly.
    CaseBuilder cb("transpose(w) feeding matmul and add", dtype, rng);
    Tensor x, w;
    std::string vx = cb.random("x", {31, 31}, x);
    std::string vw = cb.random("w", {31, 31}, w);
    std::string wt = transposed(cb, vw, {1, 0});
    std::string out = cb.b.op("add", {cb.b.op("matmul", {vx, wt}), wt});
    Tensor wT = refTranspose(w, {1, 0});
    Tensor expected =
        refZip(refMatmul(x, wT), wT, [](double p, double q) { return p + q; });
    cases.push_back(cb.finish(out, std::move(expected), 31, {1, -1}, {1, -1}));
  }
  {
    // The linear layer of test/models/linear_bias_gelu.json.
    CaseBuilder cb("x @ transpose(w) + bias -> gelu tanh", dtype, rng);
    Tensor x, w, bias;
    std::string vx = cb.random("x", {64, 128}, x);
    std::string vw = cb.random("w", {256, 128}, w);
    std::string vb = cb.random("bias", {256}, bias);
    std::string out = cb.b.op(
        "gelu",
        {cb.b.op("add",
                 {cb.b.op("matmul", {vx, transposed(cb, vw, {1, 0})}), vb})},
        {{"approximate", std::string("tanh")}});
    Tensor expected = refMap(refZip(refMatmul(x, refTranspose(w, {1, 0})), bias,
                                    [](double p, double q) { return p + q; }),
                             geluTanh);
    cases.push_back(cb.finish(out, std::move(expected), 128, {1, 1},
                              {1, dtype == DType::F64 ? 1 : 0}));
  }
  runCases(cases, target);
}

//===----------------------------------------------------------------------===//
// NaN through the activation
//===----------------------------------------------------------------------===//

/// A NaN in row 1 of A makes row 1 of the product NaN; a NaN in bias[2]
/// makes column 2 NaN. ONNX Relu and Gelu (and NumPy) keep NaN: relu(NaN)
/// is NaN, not 0, whether the activation runs in a kernel or in the
/// cuBLASLt epilogue.
void checkNaNs(DType dtype, Target target) {
  std::mt19937_64 rng(5000 + static_cast<int>(dtype));
  std::vector<MatmulCase> cases;
  struct Activation {
    const char *label;
    const char *op;
    double (*f)(double);
    const char *approximate;
  };
  const Activation activations[] = {
      {"relu", "relu", relu, nullptr},
      {"gelu tanh", "gelu", geluTanh, "tanh"},
      {"gelu erf", "gelu", geluErf, "none"},
  };
  for (const Activation &act : activations)
    for (bool withBias : {false, true}) {
      std::string label = std::string("NaN in A") +
                          (withBias ? " and bias" : "") + " -> " + act.label;
      CaseBuilder cb(label, dtype, rng);
      Tensor a = randomTensor(dtype, {4, 8}, rng, -1.0, 1.0);
      a.set(1 * 8 + 3, kNaN);
      std::string va = cb.input("a", a);
      Tensor b, bias;
      std::string vb = cb.random("b", {8, 5}, b);
      std::string value = cb.b.op("matmul", {va, vb});
      Tensor expected = refMatmul(a, b);
      if (withBias) {
        bias = randomTensor(dtype, {5}, rng, -1.0, 1.0);
        bias.set(2, kNaN);
        value = cb.b.op("add", {value, cb.input("bias", bias)});
        expected =
            refZip(expected, bias, [](double x, double y) { return x + y; });
      }
      Attrs attrs;
      if (act.approximate)
        attrs["approximate"] = std::string(act.approximate);
      value = cb.b.op(act.op, {value}, attrs);
      expected = refMap(expected, act.f);
      bool erf = std::string(act.label) == "gelu erf";
      bool folds = dtype != DType::F64 && !erf;
      cases.push_back(
          cb.finish(value, std::move(expected), 8, {1, 1}, {1, folds ? 0 : 1}));
    }
  {
    // ONNX Gemm is alpha * (A' @ B') + beta * C as NumPy computes it: with
    // alpha 0 a NaN row of the product stays NaN (0 * NaN), it is not
    // skipped as BLAS may skip a product scaled by 0.
    CaseBuilder cb("gemm alpha 0 with NaN in A", dtype, rng);
    Tensor a = randomTensor(dtype, {4, 8}, rng, -1.0, 1.0);
    a.set(2 * 8 + 5, kNaN);
    std::string va = cb.input("a", a);
    Tensor b, c;
    std::string vb = cb.random("b", {8, 5}, b);
    std::string vc = cb.random("c", {4, 5}, c);
    std::string out = cb.b.op("gemm", {va, vb, vc}, {{"alpha", 0.0}});
    cases.push_back(cb.finish(out, refGemm(a, b, &c, 0.0, 1.0, false, false), 8,
                              {1, 1}, {1, 1}));
  }
  {
    // beta 0 leaves C out, NaN and inf in it too (ONNX's reference
    // evaluator: `if c is not None and beta != 0`).
    CaseBuilder cb("gemm beta 0 with NaN and inf in C", dtype, rng);
    Tensor a, b;
    std::string va = cb.random("a", {4, 8}, a);
    std::string vb = cb.random("b", {8, 5}, b);
    Tensor c = randomTensor(dtype, {4, 5}, rng, -1.0, 1.0);
    c.set(3, kNaN);
    c.set(7, std::numeric_limits<double>::infinity());
    std::string out = cb.b.op("gemm", {va, vb, cb.input("c", c)},
                              {{"alpha", 1.5}, {"beta", 0.0}});
    cases.push_back(cb.finish(out,
                              refGemm(a, b, nullptr, 1.5, 0.0, false, false), 8,
                              {1, 0}, {1, 0}));
  }
  runCases(cases, target);
}

/// One CPU test case and one [gpu] test case running `body(target)` on
/// every float dtype.
#define MATMUL_TARGET_TEST(name, body)                                         \
  TEST_CASE(name, "[matmul]") {                                                \
    for (DType dtype : kFloatTypes) {                                          \
      INFO("dtype " << dtypeName(dtype));                                      \
      body(dtype, Target::Cpu);                                                \
    }                                                                          \
  }                                                                            \
  TEST_CASE(name " on the GPU", "[matmul][gpu]") {                             \
    FUSEC_SKIP_IF(cuda::unavailableReason());                                  \
    for (DType dtype : kFloatTypes) {                                          \
      INFO("dtype " << dtypeName(dtype));                                      \
      body(dtype, Target::Cuda);                                               \
    }                                                                          \
  }

} // namespace

MATMUL_TARGET_TEST("matmul shapes on every float dtype match an f64 reference",
                   checkShapes)
MATMUL_TARGET_TEST("gemm transposes and alpha and beta and C shapes match an "
                   "f64 reference",
                   checkGemm)
MATMUL_TARGET_TEST("bias and relu and gelu and scale after a matmul match an "
                   "f64 reference",
                   checkTails)
MATMUL_TARGET_TEST("transposes feeding a matmul fold into the call",
                   checkTransposes)
MATMUL_TARGET_TEST("NaN propagates through a matmul and its activation",
                   checkNaNs)

//===----------------------------------------------------------------------===//
// The programs and remarks
//===----------------------------------------------------------------------===//

namespace {

/// x[64,128] @ transpose(w[256,128]) + bias[256] -> gelu tanh.
Graph linearBiasGelu(DType dtype) {
  GraphBuilder b("linear");
  std::string x = b.input("x", dtype, {64, 128});
  std::string w = b.input("w", dtype, {256, 128});
  std::string bias = b.input("bias", dtype, {256});
  std::string wt =
      b.op("transpose", {w}, {{"perm", std::vector<int64_t>{1, 0}}});
  std::string y = b.op("add", {b.op("matmul", {x, wt}), bias});
  b.output(b.op("gelu", {y}, {{"approximate", std::string("tanh")}}));
  return b.build();
}

} // namespace

TEST_CASE("a linear layer is one call and one kernel on the CPU", "[matmul]") {
  Program program =
      lowerGraph(linearBiasGelu(DType::F32), test::testOptions(true)).program;
  REQUIRE(program.matmuls.size() == 1);
  REQUIRE(program.kernels.size() == 1);
  const MatmulCall &call = program.matmuls[0];
  CHECK(call.m == 64);
  CHECK(call.n == 256);
  CHECK(call.k == 128);
  CHECK(call.batch == 1);
  CHECK_FALSE(call.transposeA);
  CHECK(call.transposeB); // the transpose is the call's flag, not a kernel
  CHECK(call.bias == -1);
  CHECK(call.epilogue == Epilogue::None);
  // The bias add and gelu fuse into one kernel after the call.
  CHECK(program.kernels[0].ops.size() >= 2);
  for (const std::string &op : program.kernels[0].ops)
    CHECK(op != "transpose");
  REQUIRE(program.steps.size() >= 2);
  CHECK(program.steps[0].kind == StepKind::Matmul);
}

TEST_CASE("a linear layer is one call and no kernel for CUDA", "[matmul]") {
  // Lowering only: it needs neither a GPU nor NVRTC.
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    INFO(dtypeName(dtype));
    Program program =
        lowerGraph(linearBiasGelu(dtype), test::testOptions(true, Target::Cuda))
            .program;
    CHECK(program.kernels.empty());
    REQUIRE(program.matmuls.size() == 1);
    const MatmulCall &call = program.matmuls[0];
    CHECK(call.transposeB);
    CHECK(call.bias >= 0);
    CHECK(call.epilogue == Epilogue::GeluTanh);
    CHECK(call.dtype == dtype);
    CHECK_THAT(call.describe(program.buffers), Contains("gelu_tanh"));
  }
  // f64: cuBLASLt's epilogues are not used; bias and gelu are a kernel.
  Program f64 = lowerGraph(linearBiasGelu(DType::F64),
                           test::testOptions(true, Target::Cuda))
                    .program;
  CHECK(f64.matmuls.size() == 1);
  CHECK(f64.kernels.size() == 1);
}

TEST_CASE("a linear layer on the GPU is exactly one call", "[matmul][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  std::mt19937_64 rng(7);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    INFO(dtypeName(dtype));
    Tensor x = randomTensor(dtype, {64, 128}, rng, -1.0, 1.0);
    Tensor w = randomTensor(dtype, {256, 128}, rng, -1.0, 1.0);
    Tensor bias = randomTensor(dtype, {256}, rng, -1.0, 1.0);
    CompiledModel model =
        compile(linearBiasGelu(dtype), test::testOptions(true, Target::Cuda));
    CHECK(model.program().matmuls.size() == 1);
    CHECK(model.program().kernels.empty());
    MatmulCase c;
    c.label = "linear layer";
    c.dtype = dtype;
    c.k = 128;
    c.expected = refMap(refZip(refMatmul(x, refTranspose(w, {1, 0})), bias,
                               [](double p, double q) { return p + q; }),
                        geluTanh);
    checkOutput(model.run({x, w, bias})[0], c, 1.0);
  }
}

TEST_CASE("each matmul remarks what it folded", "[matmul]") {
  for (Target target : {Target::Cpu, Target::Cuda}) {
    INFO(targetName(target));
    std::vector<std::string> remarks;
    CompileOptions options = test::testOptions(true, target);
    options.onRemark = [&](const std::string &remark) {
      remarks.push_back(remark);
    };
    lowerGraph(linearBiasGelu(DType::F32), options);
    std::string all;
    for (const std::string &remark : remarks)
      all += remark + "\n";
    INFO("remarks:\n" << all);
    CHECK_THAT(all, Contains("runs as one library call"));
    CHECK_THAT(all, Contains("transpose of the rhs"));
    if (target == Target::Cuda) {
      CHECK_THAT(all, Contains("bias add"));
      CHECK_THAT(all, Contains("gelu_tanh epilogue"));
    } else {
      CHECK_THAT(all, Contains("CUDA target only"));
    }
  }
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Integer products
//===----------------------------------------------------------------------===//

namespace {

const DType kIntegerTypes[] = {DType::I32, DType::I64, DType::U32, DType::U64};

/// Element i of an integer tensor as its two's-complement bits.
uint64_t bitsAt(const Tensor &t, int64_t i) {
  switch (t.dtype) {
  case DType::I32:
    return static_cast<uint64_t>(static_cast<int64_t>(t.as<int32_t>()[i]));
  case DType::U32:
    return t.as<uint32_t>()[i];
  case DType::I64:
    return static_cast<uint64_t>(t.as<int64_t>()[i]);
  default:
    return t.as<uint64_t>()[i];
  }
}

/// NumPy's integer matmul: sums of products modulo 2^64 (and so modulo
/// 2^32 once truncated), an independent reference written with unsigned
/// wrapping; `c`, when given, is added (broadcast) to the [m, n] result.
Tensor refIntegerMatmul(const Tensor &a, const Tensor &b,
                        const Tensor *c = nullptr) {
  ProductShapes shapes = productShapes(a.shape, b.shape);
  const int64_t m = shapes.m, k = shapes.k, n = shapes.n;
  Tensor out(a.dtype, shapes.result);
  for (int64_t p = 0; p < numElements(shapes.batch); ++p) {
    Shape coordinate = coordinateOf(shapes.batch, p);
    const int64_t aBase = broadcastIndex(shapes.aBatch, coordinate) * m * k;
    const int64_t bBase = broadcastIndex(shapes.bBatch, coordinate) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        uint64_t sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum += bitsAt(a, aBase + i * k + l) * bitsAt(b, bBase + l * n + j);
        int64_t index = (p * m + i) * n + j;
        if (c)
          sum += bitsAt(*c, broadcastIndex(c->shape, {i, j}));
        if (dtypeBytes(a.dtype) == 4)
          out.as<uint32_t>()[index] = static_cast<uint32_t>(sum);
        else
          out.as<uint64_t>()[index] = sum;
      }
  }
  return out;
}

/// The transpose of a 2-D integer tensor, bit for bit.
Tensor transposedBits(const Tensor &x) {
  int64_t rows = x.shape[0], columns = x.shape[1];
  Tensor out(x.dtype, {columns, rows});
  size_t bytes = dtypeBytes(x.dtype);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j)
      std::memcpy(out.bytes.data() + (j * rows + i) * bytes,
                  x.bytes.data() + (i * columns + j) * bytes, bytes);
  return out;
}

/// An integer tensor of `shape` with uniformly random bits, so that the
/// products overflow and wrap.
Tensor randomBits(DType dtype, const Shape &shape, std::mt19937_64 &rng) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    uint64_t bits = rng();
    if (dtypeBytes(dtype) == 4)
      t.as<uint32_t>()[i] = static_cast<uint32_t>(bits);
    else
      t.as<uint64_t>()[i] = bits;
  }
  return t;
}

/// Integer matmul and gemm on `target`, fused and unfused, bit-exact
/// against refIntegerMatmul; gemm's alpha and beta other than 1 are
/// computed in f64 and truncated, as onnx.reference does.
void checkIntegerProducts(DType dtype, Target target) {
  std::mt19937_64 rng(7);
  struct Product {
    Shape a, b;
  };
  const Product shapes[] = {{{3, 5}, {5, 4}},
                            {{17}, {17, 6}},
                            {{6, 9}, {9}},
                            {{300}, {300}},
                            {{2, 1, 3, 40}, {4, 40, 3}},
                            {{1, 1}, {1, 65}}};
  GraphBuilder b("integer_products");
  std::vector<Tensor> inputs, expected;
  auto input = [&](const Tensor &t) {
    inputs.push_back(t);
    return b.input("in" + std::to_string(inputs.size()), dtype, t.shape);
  };
  for (const Product &shape : shapes) {
    Tensor lhs = randomBits(dtype, shape.a, rng);
    Tensor rhs = randomBits(dtype, shape.b, rng);
    b.output(b.op("matmul", {input(lhs), input(rhs)}));
    expected.push_back(refIntegerMatmul(lhs, rhs));
  }
  // gemm with transposes and C, alpha 1 and beta 1: integer arithmetic.
  Tensor a = randomBits(dtype, {7, 3}, rng), w = randomBits(dtype, {5, 7}, rng);
  Tensor c = randomBits(dtype, {1, 5}, rng);
  b.output(b.op("gemm", {input(a), input(w), input(c)},
                {{"transA", int64_t(1)}, {"transB", int64_t(1)}}));
  expected.push_back(
      refIntegerMatmul(transposedBits(a), transposedBits(w), &c));
  // alpha 0.5, beta -3 on small values: (0.5 * product - 3 * C) truncated
  // toward zero, computed in f64.
  Tensor small = randomTensor(dtype, {4, 6}, rng, 0, 9);
  Tensor smallW = randomTensor(dtype, {6, 2}, rng, 0, 9);
  Tensor smallC = randomTensor(dtype, {2}, rng, 0, 3);
  b.output(b.op("gemm", {input(small), input(smallW), input(smallC)},
                {{"alpha", 0.5}, {"beta", -3.0}}));
  Tensor scaled(dtype, {4, 2});
  Tensor product = refIntegerMatmul(small, smallW);
  for (int64_t i = 0; i < scaled.numElements(); ++i)
    scaled.set(i, std::trunc(0.5 * product.at(i) - 3.0 * smallC.at(i % 2)));
  expected.push_back(scaled);

  Graph graph = b.build();
  if (target == Target::Cpu)
    test::compileForGpus(graph, /*everyVariant=*/false); // NVRTC, no device
  for (bool fuse : {true, false}) {
    INFO((fuse ? "fused" : "unfused") << " on " << targetName(target));
    std::optional<std::vector<Tensor>> outputs =
        compileAndRun(graph, inputs, fuse, target);
    REQUIRE(outputs);
    REQUIRE(outputs->size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("output " << i << ": " << (*outputs)[i].typeString());
      CHECK((*outputs)[i].dtype == dtype);
      CHECK((*outputs)[i].shape == expected[i].shape);
      CHECK((*outputs)[i].bytes == expected[i].bytes);
    }
  }
}

} // namespace

TEST_CASE("integer matmul and gemm wrap as NumPy's integer matmul does",
          "[matmul]") {
  for (DType dtype : kIntegerTypes) {
    INFO("dtype " << dtypeName(dtype));
    checkIntegerProducts(dtype, Target::Cpu);
  }
}

TEST_CASE("integer matmul and gemm wrap as NumPy's integer matmul does on the "
          "GPU",
          "[matmul][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  for (DType dtype : kIntegerTypes) {
    INFO("dtype " << dtypeName(dtype));
    checkIntegerProducts(dtype, Target::Cuda);
  }
}

TEST_CASE("an integer product is one kernel and no library call", "[matmul]") {
  GraphBuilder b("int_matmul");
  std::string x = b.input("x", DType::I32, {2, 1, 64, 96});
  std::string w = b.input("w", DType::I32, {3, 96, 32});
  b.output(b.op("matmul", {x, w}));
  Graph graph = b.build();
  for (Target target : {Target::Cpu, Target::Cuda}) {
    INFO(targetName(target));
    checkStructure(lowerGraph(graph, test::testOptions(true, target)).program,
                   {0, 1});
  }
}

TEST_CASE("a matmul of 8- or 16-bit integers is an error naming the node",
          "[matmul]") {
  for (DType dtype : {DType::I8, DType::U8, DType::I16}) {
    INFO(dtypeName(dtype));
    GraphBuilder b("int_matmul");
    std::string x = b.input("x", dtype, {2, 3});
    std::string w = b.input("w", dtype, {3, 4});
    b.output(b.op("matmul", {x, w})); // node "matmul_0"
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'matmul_0': error: ") &&
                          Contains(dtypeName(dtype)) && Contains("i32"));
  }
}

TEST_CASE("mismatched contracted dims are an error naming the node and both "
          "shapes",
          "[matmul]") {
  {
    GraphBuilder b("bad_k");
    std::string x = b.input("x", DType::F32, {2, 3});
    std::string w = b.input("w", DType::F32, {4, 5});
    b.output(b.op("matmul", {x, w}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'matmul_0': error: ") && Contains("2x3") &&
                          Contains("4x5"));
  }
  {
    GraphBuilder b("bad_vector");
    std::string x = b.input("x", DType::F32, {7});
    std::string w = b.input("w", DType::F32, {6});
    b.output(b.op("matmul", {x, w}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'matmul_0': error: ") && Contains("[7]") &&
                          Contains("[6]"));
  }
  {
    // transB makes B [5, 4]: k 3 vs 4.
    GraphBuilder b("bad_gemm");
    std::string x = b.input("x", DType::F32, {2, 3});
    std::string w = b.input("w", DType::F32, {3, 4});
    b.output(b.op("gemm", {x, w, ""}, {{"transB", int64_t(1)}}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'gemm_0': error: ") && Contains("2x3") &&
                          Contains("3x4"));
  }
  {
    GraphBuilder b("bad_batch");
    std::string x = b.input("x", DType::F32, {2, 3, 4});
    std::string w = b.input("w", DType::F32, {3, 4, 5});
    b.output(b.op("matmul", {x, w}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'matmul_0': error: ") &&
                          Contains("broadcast"));
  }
}

TEST_CASE("bad matmul and gemm operands are errors naming the node",
          "[matmul]") {
  struct Bad {
    const char *label, *op;
    DType dtypeA, dtypeB;
    Shape a, b;
    std::optional<Shape> c;
    const char *expected;
  };
  const Bad cases[] = {
      {"rank 0 operand", "matmul", DType::F32, DType::F32, {}, {3}, {}, "rank"},
      {"mixed dtypes",
       "matmul",
       DType::F32,
       DType::F16,
       {2, 3},
       {3, 4},
       {},
       "dtype"},
      {"3-D gemm operand",
       "gemm",
       DType::F32,
       DType::F32,
       {2, 2, 3},
       {3, 4},
       {},
       "2-D"},
      {"gemm C that does not broadcast",
       "gemm",
       DType::F32,
       DType::F32,
       {2, 3},
       {3, 4},
       Shape{5},
       "broadcast"},
  };
  for (const Bad &bad : cases) {
    INFO(bad.label);
    GraphBuilder b("bad");
    std::vector<std::string> inputs = {b.input("a", bad.dtypeA, bad.a),
                                       b.input("b", bad.dtypeB, bad.b)};
    if (bad.c)
      inputs.push_back(b.input("c", bad.dtypeA, *bad.c));
    else if (std::string(bad.op) == "gemm")
      inputs.push_back(""); // C left out by name (two inputs crashed)
    b.output(b.op(bad.op, inputs));
    CHECK_THROWS_WITH(
        compile(b.build(), test::testOptions()),
        Contains("node '" + std::string(bad.op) + "_0': error: ") &&
            Contains(bad.expected));
  }
}

// Last in the file: it crashed the importer when written (see the report),
// and a crash ends a run of the whole binary.
MATMUL_TARGET_TEST("gemm with two inputs and no C matches an f64 reference",
                   checkGemmWithoutC)
