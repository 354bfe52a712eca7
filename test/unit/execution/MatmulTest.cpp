//===- MatmulTest.cpp - matmul and gemm graphs against f64 ---------------===//
//
// `matmul` (ONNX MatMul, NumPy's matmul) and `gemm` (ONNX Gemm) built as
// graphs, compiled with the public API, run and compared with the f64
// reference of test/unit/support/MatmulCases.h, each case also checking the
// program it expects.
//
// Every check is a function of the Target: the CPU test cases and the [gpu]
// ones run the same code.
//
//===----------------------------------------------------------------------===//

#include "test/unit/support/MatmulCases.h"

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
using namespace fusec::test::matmul;
using Catch::Matchers::Contains;

namespace {

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
    // A contracted dim of 1 is a broadcast multiply: one kernel, no call.
    {"1x1 @ 1x1", {1, 1}, {1, 1}, 0, 1},
    {"row times column 1x5 @ 5x1", {1, 5}, {5, 1}, 1, 0},
    {"outer product 7x1 @ 1x13", {7, 1}, {1, 13}, 0, 1},
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

//===----------------------------------------------------------------------===//
// Unaligned columns: padded on the GPU (fuse-prepare-library-calls)
//===----------------------------------------------------------------------===//

/// 257 columns are not whole 16-byte rows in any float dtype: on the GPU the
/// constant weights (and bias) get zero columns and a slice kernel reads
/// the result; the numbers are the unpadded product's.
void checkPaddedColumns(DType dtype, Target target) {
  std::mt19937_64 rng(41);
  std::vector<MatmulCase> cases;
  {
    CaseBuilder cb("constant weight and bias, relu epilogue", dtype, rng);
    Tensor a;
    std::string va = cb.random("a", {64, 96}, a);
    Tensor w = randomTensor(dtype, {96, 257}, rng, -1.0, 1.0);
    Tensor bias = randomTensor(dtype, {257}, rng, -1.0, 1.0);
    std::string y = cb.b.op(
        "relu", {cb.b.op("add", {cb.b.op("matmul", {va, cb.b.constant("w", w)}),
                                 cb.b.constant("bias", bias)})});
    Tensor expected = refMap(
        refZip(refMatmul(a, w), bias, [](double x, double b) { return x + b; }),
        relu);
    // f64 has no cuBLASLt epilogue: its bias and relu are a kernel after
    // the slice.
    cases.push_back(cb.finish(y, expected, 96, {1, 1},
                              {1, dtype == DType::F64 ? 2 : 1}));
  }
  {
    CaseBuilder cb("constant transposed weight (gemm transB)", dtype, rng);
    Tensor a;
    std::string va = cb.random("a", {2, 64, 96}, a);
    Tensor w = randomTensor(dtype, {257, 96}, rng, -1.0, 1.0);
    std::string y = cb.b.op(
        "matmul", {va, cb.b.op("transpose", {cb.b.constant("w", w)},
                               {{"perm", std::vector<int64_t>{1, 0}}})});
    cases.push_back(cb.finish(y, refMatmul(a, refTranspose(w, {1, 0})), 96,
                              {1, 0}, {1, 1}));
  }
  runCases(cases, target);
  // The padded call, seen in the program.
  CompileOptions options = test::testOptions(true, Target::Cuda);
  Program program = lowerGraph(cases[0].graph, options).program;
  REQUIRE(program.matmuls.size() == 1);
  CHECK(program.matmuls[0].n == (dtype == DType::F64   ? 258
                                 : dtype == DType::F32 ? 260
                                                       : 264));
  CHECK(program.buffers[program.outputs[0]].shape == Shape{64, 257});
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
MATMUL_TARGET_TEST("a large call's unaligned columns are padded on the GPU and "
                   "match an f64 reference",
                   checkPaddedColumns)
MATMUL_TARGET_TEST("transposes feeding a matmul fold into the call",
                   checkTransposes)
MATMUL_TARGET_TEST("NaN propagates through a matmul and its activation",
                   checkNaNs)

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

// Last in the file: it crashed the importer when written (see the report),
// and a crash ends a run of the whole binary.
MATMUL_TARGET_TEST("gemm with two inputs and no C matches an f64 reference",
                   checkGemmWithoutC)
