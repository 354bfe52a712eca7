//===- ReductionTest.cpp - Reductions and composites against f64 ---------===//
//
// reduce_{sum,mean,max,min,prod,l2,log_sum_exp}, softmax, log_softmax,
// layer_norm, rms_norm, gelu and silu, built as graphs, compiled fused and
// unfused, run, and compared with the independent f64 reference of
// ReferenceOps.h (test/unit/support/ReductionCases.h has the tolerances).
//
// Every check is a function of the Target: the CPU test cases and the [gpu]
// ones at the end run the same code.
//
//===----------------------------------------------------------------------===//

#include "test/unit/support/ReductionCases.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

using namespace fusec;
using namespace fusec::test::reduction;

namespace {

//===----------------------------------------------------------------------===//
// Every reduction x dtype x axes pattern
//===----------------------------------------------------------------------===//

struct AxesCase {
  const char *label;
  Shape shape;
  Axes axes;
  bool keepdims;
  bool noop = false;
};

const AxesCase kAxesCases[] = {
    {"innermost, 6x37 axes [1]", {6, 37}, A({1}), true},
    {"innermost, 6x37 axes [-1] keepdims 0", {6, 37}, A({-1}), false},
    {"outermost (column), 37x6 axes [0]", {37, 6}, A({0}), true},
    {"column, 129x5 axes [-2] keepdims 0", {129, 5}, A({-2}), false},
    {"middle of 3-D, 4x33x5 axes [1]", {4, 33, 5}, A({1}), true},
    {"middle of 3-D, 4x33x5 axes [-2] keepdims 0", {4, 33, 5}, A({-2}), false},
    {"several, 5x6x7 axes [0,2] keepdims 0", {5, 6, 7}, A({0, 2}), false},
    {"several unsorted, 5x6x7 axes [2,0]", {5, 6, 7}, A({2, 0}), true},
    {"trailing pair, 3x5x7 axes [1,2]", {3, 5, 7}, A({1, 2}), true},
    {"leading pair, 3x5x7 axes [0,-2] keepdims 0",
     {3, 5, 7},
     A({0, -2}),
     false},
    {"rank 4, 2x3x4x5 axes [1,3] keepdims 0", {2, 3, 4, 5}, A({1, 3}), false},
    {"all axes (absent), 7x9x3", {7, 9, 3}, std::nullopt, true},
    {"all axes (absent), 7x9x3 keepdims 0", {7, 9, 3}, std::nullopt, false},
    {"all axes (empty list), 5x4 keepdims 0", {5, 4}, A({}), false},
    {"all axes by negatives, 4x5x6 axes [-1,-3,-2] keepdims 0",
     {4, 5, 6},
     A({-1, -3, -2}),
     false},
    {"negative middle, 3x4x5 axes [-2]", {3, 4, 5}, A({-2}), true},
    {"length-1 reduced dim, 5x1x3 axes [1] keepdims 0",
     {5, 1, 3},
     A({1}),
     false},
    {"length-1 reduced dim, 1x4 axes [0]", {1, 4}, A({0}), true},
    {"length-1 rows, 9x1 axes [1]", {9, 1}, A({1}), true},
    {"length-1 dims mixed, 1x7x1 axes [0,2] keepdims 0",
     {1, 7, 1},
     A({0, 2}),
     false},
    {"rank 1, length 1", {1}, std::nullopt, false},
    {"rank 1, odd 13 axes [0]", {13}, A({0}), true},
    {"rank 0 (scalar)", {}, std::nullopt, true},
    {"noop_with_empty_axes, axes absent, 3x4",
     {3, 4},
     std::nullopt,
     true,
     true},
    {"noop_with_empty_axes, empty list, 3x4 keepdims 0",
     {3, 4},
     A({}),
     false,
     true},
    {"noop_with_empty_axes with axes [1], 3x4 keepdims 0",
     {3, 4},
     A({1}),
     false,
     true},
    {"long rows, 3x5000 axes [1] keepdims 0", {3, 5000}, A({1}), false},
    {"long columns, 5000x3 axes [0]", {5000, 3}, A({0}), true},
    {"long middle, 3x2000x4 axes [1] keepdims 0", {3, 2000, 4}, A({1}), false},
    {"large rows, 64x70000 axes [-1] keepdims 0", {64, 70000}, A({-1}), false},
    {"large, 2^20 all axes (absent)", {1024, 1024}, std::nullopt, false},
    {"large columns, 1024x1024 axes [0]", {1024, 1024}, A({0}), true},
};

/// Integer inputs for mean and l2 whose sums of squares (hence of |x|)
/// stay within the dtype in every group, whatever the order of
/// accumulation: random elements of each group are zeroed past the budget.
Tensor boundedIntInput(DType dtype, const Shape &shape, const Axes &axes,
                       bool noop, std::mt19937_64 &rng) {
  int64_t n = std::max<int64_t>(1, reductionLength(shape, axes, noop));
  double limit = static_cast<double>(ref::intMax(dtype));
  double magnitude = std::max(1.0, std::floor(std::sqrt(limit / n)));
  magnitude = std::min(magnitude, dtype == DType::I8 ? 5.0 : 1e6);
  Tensor t = random(dtype, shape, rng, -magnitude, magnitude);
  std::vector<int64_t> resolved =
      ref::resolveAxes(axes, static_cast<int64_t>(shape.size()), noop);
  for (std::vector<int64_t> &group : ref::reductionGroups(shape, resolved)) {
    std::shuffle(group.begin(), group.end(), rng);
    double squares = 0;
    for (int64_t i : group) {
      double v = static_cast<double>(ref::intAt(t, i));
      if (squares + v * v > limit)
        ref::setInt(t, i, 0);
      else
        squares += v * v;
    }
  }
  return t;
}

/// reduce_prod inputs: floats of magnitude near 1 (so that long products
/// neither overflow nor underflow) with random signs; ints odd in [-3, 3]
/// (so that the wrapped product is not simply 0).
Tensor prodInput(DType dtype, const Shape &shape, int64_t n,
                 std::mt19937_64 &rng) {
  Tensor t(dtype, shape);
  if (isFloat(dtype)) {
    double spread = std::min(0.5, 2.0 / std::sqrt(static_cast<double>(n)));
    std::uniform_real_distribution<double> magnitude(1 - spread, 1 + spread);
    std::uniform_int_distribution<int> sign(0, 1);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, (sign(rng) ? 1 : -1) * magnitude(rng));
  } else {
    std::uniform_int_distribution<int> odd(-2, 1);
    for (int64_t i = 0; i < t.numElements(); ++i)
      ref::setInt(t, i, 2 * odd(rng) + 1);
  }
  return t;
}

std::pair<double, double> generalRange(DType dtype) {
  switch (dtype) {
  case DType::I8:
    return {-120, 120};
  case DType::I32:
    return {-1e6, 1e6}; // long sums wrap: the reference wraps too
  case DType::I64:
    return {-1e12, 1e12};
  case DType::I16:
    return {-30000, 30000};
  case DType::U8:
    return {0, 255};
  case DType::U16:
    return {0, 65535};
  case DType::U32:
    return {0, 4e9};
  case DType::U64: // below 2^63: the reference reads u64 as int64
    return {0, 1e12};
  default:
    return {-1, 1};
  }
}

/// The reductions of `ac` on `dtype`: one graph for sum, max, min, prod,
/// mean and l2, and (floats) one for log_sum_exp, whose max-then-sum
/// decomposition is the likeliest to be refused for some axes: a refusal
/// then leaves the other reductions tested.
std::vector<Case> reductionCases(DType dtype, const AxesCase &ac) {
  std::mt19937_64 rng(std::hash<std::string>()(ac.label) ^
                      static_cast<uint64_t>(dtype));
  int64_t n = reductionLength(ac.shape, ac.axes, ac.noop);
  CaseBuilder cb(std::string(ac.label) + ", " + dtypeName(dtype));
  auto range = generalRange(dtype);
  Tensor x = random(dtype, ac.shape, rng, range.first, range.second);
  Tensor p = prodInput(dtype, ac.shape, n, rng);
  std::string vx = cb.input("x", x), vp = cb.input("p", p);
  using K = ref::ReduceKind;
  for (K kind : {K::Sum, K::Max, K::Min})
    addReduction(cb, kind, vx, x, ac.axes, ac.keepdims, ac.noop);
  addReduction(cb, K::Prod, vp, p, ac.axes, ac.keepdims, ac.noop);
  std::vector<Case> cases;
  if (isFloat(dtype)) {
    for (K kind : {K::Mean, K::L2})
      addReduction(cb, kind, vx, x, ac.axes, ac.keepdims, ac.noop);
    CaseBuilder lse(std::string(ac.label) + ", " + dtypeName(dtype) +
                    ", reduce_log_sum_exp alone");
    addReduction(lse, K::LogSumExp, lse.input("x", x), x, ac.axes, ac.keepdims,
                 ac.noop);
    cases.push_back(lse.finish());
  } else {
    Tensor q = boundedIntInput(dtype, ac.shape, ac.axes, ac.noop, rng);
    std::string vq = cb.input("q", q);
    for (K kind : {K::Mean, K::L2, K::LogSumExp})
      addReduction(cb, kind, vq, q, ac.axes, ac.keepdims, ac.noop);
  }
  cases.insert(cases.begin(), cb.finish());
  return cases;
}

void checkReductions(DType dtype, Target target) {
  std::vector<Case> cases;
  for (const AxesCase &ac : kAxesCases)
    for (Case &c : reductionCases(dtype, ac))
      cases.push_back(std::move(c));
  runCase(mergeCases(std::move(cases),
                     std::string("reductions on ") + dtypeName(dtype)),
          target);
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax, layer_norm, rms_norm, gelu, silu
//===----------------------------------------------------------------------===//

struct NormCase {
  const char *label;
  Shape shape;
  int64_t axis;
  /// layer_norm's weight and bias shapes (broadcast to dims [axis, rank)).
  Shape weightShape, biasShape;
  std::optional<double> epsilon; ///< absent: the default 1e-5
};

const NormCase kNormCases[] = {
    {"7x33 axis -1", {7, 33}, -1, {33}, {33}, std::nullopt},
    {"33x7 axis 0 (everything)", {33, 7}, 0, {33, 7}, {7}, std::nullopt},
    {"3x5x7 axis 1", {3, 5, 7}, 1, {5, 7}, {1, 7}, 1e-3},
    {"2x3x4 axis -2", {2, 3, 4}, -2, {3, 4}, {3, 4}, std::nullopt},
    {"4x1 axis -1 (length 1)", {4, 1}, -1, {1}, {1}, std::nullopt},
    {"1x1 axis 1", {1, 1}, 1, {1}, {1}, std::nullopt},
    {"rank 1, 1000 axis 0", {1000}, 0, {1000}, {1000}, std::nullopt},
    {"4x5000 axis -1", {4, 5000}, -1, {5000}, {5000}, std::nullopt},
    {"2x70000 axis 1", {2, 70000}, 1, {70000}, {70000}, 1e-6},
};

Attrs normAttrs(int64_t axis, std::optional<double> epsilon) {
  Attrs attrs{{"axis", axis}};
  if (epsilon)
    attrs["epsilon"] = *epsilon;
  return attrs;
}

int64_t normalizedLength(const Shape &shape, int64_t axis) {
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t first = axis < 0 ? axis + rank : axis;
  int64_t n = 1;
  for (int64_t d = first; d < rank; ++d)
    n *= shape[d];
  return n;
}

int64_t axisLength(const Shape &shape, int64_t axis) {
  int64_t rank = static_cast<int64_t>(shape.size());
  return shape[axis < 0 ? axis + rank : axis];
}

Case compositeCase(DType dtype, const NormCase &nc) {
  std::mt19937_64 rng(std::hash<std::string>()(nc.label) ^
                      static_cast<uint64_t>(dtype));
  CaseBuilder cb(std::string(nc.label) + ", " + dtypeName(dtype));
  // Offset from 0 so that layer_norm has a mean to remove.
  Tensor x = random(dtype, nc.shape, rng, -2.5, 3.5);
  Tensor w = random(dtype, nc.weightShape, rng, 0.5, 1.5);
  Tensor bias = random(dtype, nc.biasShape, rng, -0.5, 0.5);
  Tensor g = random(dtype, nc.shape, rng, -6, 6);
  std::string vx = cb.input("x", x), vw = cb.input("w", w),
              vb = cb.input("b", bias), vg = cb.input("g", g);
  int64_t n = normalizedLength(nc.shape, nc.axis);
  int64_t length = axisLength(nc.shape, nc.axis);
  double eps = nc.epsilon.value_or(1e-5);
  Attrs attrs = normAttrs(nc.axis, nc.epsilon);

  cb.output(cb.b.op("softmax", {vx}, {{"axis", nc.axis}}), "softmax",
            ref::softmax(x, nc.axis), dtype, softmaxBound(dtype, length));
  cb.output(cb.b.op("log_softmax", {vx}, {{"axis", nc.axis}}), "log_softmax",
            ref::logSoftmax(x, nc.axis), dtype, logSoftmaxBound(dtype, length));
  cb.output(cb.b.op("layer_norm", {vx, vw, vb}, attrs), "layer_norm(x, w, b)",
            ref::layerNorm(x, &w, &bias, nc.axis, eps), dtype,
            normBound(dtype, n));
  cb.output(cb.b.op("layer_norm", {vx}, attrs), "layer_norm(x)",
            ref::layerNorm(x, nullptr, nullptr, nc.axis, eps), dtype,
            normBound(dtype, n));
  cb.output(cb.b.op("layer_norm", {vx, "", vb}, attrs),
            "layer_norm(x, none, b)",
            ref::layerNorm(x, nullptr, &bias, nc.axis, eps), dtype,
            normBound(dtype, n));
  cb.output(cb.b.op("rms_norm", {vx, vw}, attrs), "rms_norm(x, w)",
            ref::rmsNorm(x, &w, nc.axis, eps), dtype, normBound(dtype, n));
  cb.output(cb.b.op("rms_norm", {vx}, attrs), "rms_norm(x)",
            ref::rmsNorm(x, nullptr, nc.axis, eps), dtype, normBound(dtype, n));
  cb.output(cb.b.op("gelu", {vg}), "gelu (default: erf)", ref::gelu(g, false),
            dtype, pointwiseBound(dtype));
  cb.output(cb.b.op("gelu", {vg}, {{"approximate", std::string("none")}}),
            "gelu none", ref::gelu(g, false), dtype, pointwiseBound(dtype));
  cb.output(cb.b.op("gelu", {vg}, {{"approximate", std::string("tanh")}}),
            "gelu tanh", ref::gelu(g, true), dtype, pointwiseBound(dtype));
  cb.output(cb.b.op("silu", {vg}), "silu", ref::silu(g), dtype,
            pointwiseBound(dtype));
  return cb.finish();
}

void checkComposites(DType dtype, Target target) {
  std::vector<Case> cases;
  for (const NormCase &nc : kNormCases)
    cases.push_back(compositeCase(dtype, nc));
  runCase(mergeCases(std::move(cases),
                     std::string("composites on ") + dtypeName(dtype)),
          target);
}

//===----------------------------------------------------------------------===//
// Reductions and composites combined with pointwise ops
//===----------------------------------------------------------------------===//

void checkCombinations(DType dtype, Target target) {
  // Kernel boundaries are the compiler's choice, and a 16-bit intermediate
  // between two kernels is rounded: the loose bounds apply to 16-bit types.
  auto bound = [&](Bound b) {
    return isFloat(dtype) && dtypeBytes(dtype) == 2 ? widenForUnfused(b, dtype)
                                                    : b;
  };
  const int64_t rows = 9, columns = 333;
  std::mt19937_64 rng(1234 + static_cast<int>(dtype));
  Tensor x = random(dtype, {rows, columns}, rng, -2, 2);
  Tensor positive = random(dtype, {rows, columns}, rng, 0.5, 1.5);
  Tensor r = random(dtype, {rows, columns}, rng, -1, 1);
  Tensor mask = random(dtype, {1, columns}, rng, -4, 0);
  Tensor w = random(dtype, {columns}, rng, 0.5, 1.5);
  Tensor bias = random(dtype, {columns}, rng, -0.5, 0.5);
  Tensor x3 = random(dtype, {4, 6, 35}, rng, -1, 1);
  int64_t n = columns;

  {
    CaseBuilder cb(std::string("scaled, masked softmax, ") + dtypeName(dtype));
    std::string vx = cb.input("x", x), vm = cb.input("mask", mask);
    std::string scaled =
        cb.b.op("add", {cb.b.op("mul", {vx, cb.b.scalar(0.125, dtype)}), vm});
    Tensor scaledRef =
        ref::zip(ref::map(ref::toF64(x), [](double v) { return v * 0.125; }),
                 mask, addF);
    // The scalar 0.125 and x * 0.125 are exact in every float dtype; the
    // add rounds once in the dtype, inside or between kernels.
    cb.output(cb.b.op("softmax", {scaled}), "softmax(x * 0.125 + mask)",
              ref::softmax(ref::castTo(scaledRef, dtype), -1), dtype,
              bound(softmaxBound(dtype, n)));
    runCase(cb.finish(), target);
  }
  {
    CaseBuilder cb(std::string("row normalization x / sum(x), ") +
                   dtypeName(dtype));
    std::string vx = cb.input("x", positive);
    std::string sum = cb.b.op("reduce_sum", {vx}, reduceAttrs(A({-1}), true));
    cb.output(
        cb.b.op("div", {vx, sum}), "x / reduce_sum(x, keepdims)",
        ref::zip(positive,
                 ref::reduce(ref::ReduceKind::Sum, positive, A({-1}), true),
                 divF),
        dtype, bound(softmaxBound(dtype, n)));
    cb.output(sum, "reduce_sum(x, keepdims)",
              ref::reduce(ref::ReduceKind::Sum, positive, A({-1}), true), dtype,
              bound({0, outRtol(dtype) + accTol(dtype, n), 0}));
    runCase(cb.finish(), target);
  }
  {
    CaseBuilder cb(std::string("log(sum(exp(x))) by hand and centering, ") +
                   dtypeName(dtype));
    std::string vx = cb.input("x", x);
    cb.output(
        cb.b.op("log", {cb.b.op("reduce_sum", {cb.b.op("exp", {vx})},
                                reduceAttrs(A({1}), false))}),
        "log(reduce_sum(exp(x)))",
        ref::map(ref::reduce(ref::ReduceKind::Sum,
                             ref::map(ref::toF64(x), expF), A({1}), false),
                 logF),
        dtype, bound(logSoftmaxBound(dtype, n)));
    std::string mean = cb.b.op("reduce_mean", {vx}, reduceAttrs(A({-1}), true));
    Tensor meanRef = ref::reduce(ref::ReduceKind::Mean, x, A({-1}), true);
    cb.output(cb.b.op("sub", {vx, mean}), "x - reduce_mean(x, keepdims)",
              ref::zip(x, meanRef, subF), dtype,
              bound({accTol(dtype, n) * 2, outRtol(dtype), 0}));
    runCase(cb.finish(), target);
  }
  {
    CaseBuilder cb(std::string("column norm sqrt(sum(x*x, axis 0)), ") +
                   dtypeName(dtype));
    std::string vx = cb.input("x", x);
    cb.output(cb.b.op("sqrt", {cb.b.op("reduce_sum", {cb.b.op("mul", {vx, vx})},
                                       reduceAttrs(A({0}), true))}),
              "sqrt(reduce_sum(x * x, axes [0]))",
              ref::map(ref::reduce(ref::ReduceKind::Sum, ref::zip(x, x, mulF),
                                   A({0}), true),
                       sqrtF),
              dtype, bound({0, outRtol(dtype) + accTol(dtype, rows), 0}));
    runCase(cb.finish(), target);
  }
  {
    CaseBuilder cb(std::string("reduction of a reduction, ") +
                   dtypeName(dtype));
    std::string v = cb.input("x3", x3);
    std::string inner = cb.b.op("reduce_sum", {v}, reduceAttrs(A({2}), false));
    Tensor innerRef = ref::reduce(ref::ReduceKind::Sum, x3, A({2}), false);
    // The max of sums within their bound is within that bound of the max.
    cb.output(cb.b.op("reduce_max", {inner}, reduceAttrs(A({1}), false)),
              "reduce_max(reduce_sum(x, [2]), [1])",
              ref::reduce(ref::ReduceKind::Max, innerRef, A({1}), false), dtype,
              bound({accTol(dtype, 35) * std::sqrt(35.0), outRtol(dtype), 0}));
    runCase(cb.finish(), target);
  }
  {
    CaseBuilder cb(std::string("several reductions of one input, ") +
                   dtypeName(dtype));
    std::string vx = cb.input("x", x);
    addReduction(cb, ref::ReduceKind::Sum, vx, x, A({1}), false);
    addReduction(cb, ref::ReduceKind::Max, vx, x, A({1}), false);
    addReduction(cb, ref::ReduceKind::Min, vx, x, A({-1}), true);
    cb.output(cb.b.op("softmax", {vx}), "softmax", ref::softmax(x, -1), dtype,
              softmaxBound(dtype, n));
    cb.output(cb.b.op("exp", {vx}), "exp(x)", ref::map(x, expF), dtype,
              pointwiseBound(dtype));
    runCase(cb.finish(), target);
  }
  {
    CaseBuilder cb(std::string("layer_norm then gelu, residual rms_norm * w, "
                               "swiglu, ") +
                   dtypeName(dtype));
    std::string vx = cb.input("x", x), vr = cb.input("r", r),
                vw = cb.input("w", w), vb = cb.input("b", bias);
    Tensor ln = ref::layerNorm(x, &w, &bias, -1, 1e-5);
    // gelu amplifies the layer_norm error by at most max|gelu'| < 1.13.
    Bound lnGelu = normBound(dtype, n);
    lnGelu.atol *= 1.2;
    lnGelu.rtol = 1.2 * lnGelu.rtol + outRtol(dtype);
    cb.output(cb.b.op("gelu", {cb.b.op("layer_norm", {vx, vw, vb})},
                      {{"approximate", std::string("tanh")}}),
              "gelu_tanh(layer_norm(x, w, b))", ref::gelu(ln, true), dtype,
              bound(lnGelu));
    std::string sum = cb.b.op("add", {vx, vr});
    Tensor sumRef = ref::castTo(ref::zip(x, r, addF), dtype);
    cb.output(cb.b.op("mul", {cb.b.op("rms_norm", {sum}), vw}),
              "rms_norm(x + r) * w",
              ref::zip(ref::rmsNorm(sumRef, nullptr, -1, 1e-5), w, mulF), dtype,
              bound(normBound(dtype, n)));
    cb.output(cb.b.op("mul", {cb.b.op("silu", {vx}), vr}), "silu(x) * r",
              ref::zip(ref::silu(x), r, mulF), dtype,
              bound(pointwiseBound(dtype)));
    runCase(cb.finish(), target);
  }
}

//===----------------------------------------------------------------------===//
// Edge cases
//===----------------------------------------------------------------------===//

void checkInfinitiesInSoftmax(Target target) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    // 100000: rows too long for registers, where the GPU computes softmax's
    // max and sum in one pass (online softmax).
    for (int64_t length : {9, 1000, 100000}) {
      CaseBuilder cb(std::string("softmax rows with -inf, length ") +
                     std::to_string(length) + ", " + dtypeName(dtype));
      std::mt19937_64 rng(length);
      Tensor x = random(dtype, {5, length}, rng, -3, 3);
      for (int64_t j = 0; j < length; ++j) {
        if (j % 3 == 0 || j == length - 1)
          x.set(0 * length + j, -kInf); // some -inf, the last included
        x.set(1 * length + j, -kInf);   // all -inf: NaN as NumPy
        if (j != length / 2)
          x.set(2 * length + j, -kInf); // one finite element
        if (j == 0)
          x.set(3 * length + j, -kInf); // -inf first
      }
      std::string vx = cb.input("x", x);
      cb.output(cb.b.op("softmax", {vx}), "softmax", ref::softmax(x, -1), dtype,
                softmaxBound(dtype, length));
      cb.output(cb.b.op("log_softmax", {vx}), "log_softmax",
                ref::logSoftmax(x, -1), dtype, logSoftmaxBound(dtype, length));
      std::vector<Tensor> outputs = runCase(cb.finish(), target);
      if (outputs.size() == 2) {
        // Spelled out, independently of the reference.
        for (int64_t j = 0; j < length; ++j) {
          INFO("column " << j);
          CHECK(std::isnan(outputs[0].at(1 * length + j)));
          CHECK(std::isnan(outputs[1].at(1 * length + j)));
        }
        CHECK(outputs[0].at(2 * length + length / 2) == 1.0);
        CHECK(outputs[1].at(2 * length + length / 2) == 0.0);
        CHECK(outputs[0].at(0) == 0.0);
        CHECK(outputs[1].at(0) == -kInf);
      }
    }
  }
}

void checkHugeValues(Target target) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F64}) {
    CaseBuilder cb(std::string("huge values (1e30, 3e38), ") +
                   dtypeName(dtype));
    const int64_t length = 6;
    Tensor x = fromValues(dtype, {5, length},
                          {1e30,  1e30,  -1e30, 0,     5,     -5,    //
                           3e38,  3e38,  3e38,  -3e38, 1,     0,     //
                           3e38,  0,     -3e38, 2e38,  -1e38, 1e38,  //
                           -3e38, -3e38, -3e38, -3e38, -3e38, -3e38, //
                           1e30,  -1e30, 1,     2,     3,     4});
    std::string vx = cb.input("x", x);
    cb.output(cb.b.op("softmax", {vx}), "softmax", ref::softmax(x, -1), dtype,
              softmaxBound(dtype, length));
    cb.output(cb.b.op("log_softmax", {vx}), "log_softmax",
              ref::logSoftmax(x, -1), dtype, logSoftmaxBound(dtype, length));
    addReduction(cb, ref::ReduceKind::LogSumExp, vx, x, A({-1}), false);
    addReduction(cb, ref::ReduceKind::Max, vx, x, A({-1}), false);
    addReduction(cb, ref::ReduceKind::Min, vx, x, A({-1}), false);
    // Column-wise too: the stable forms must not overflow along axis 0.
    cb.output(cb.b.op("softmax", {vx}, {{"axis", int64_t(0)}}),
              "softmax axis 0", ref::softmax(x, 0), dtype,
              softmaxBound(dtype, 5));
    std::vector<Tensor> outputs = runCase(cb.finish(), target);
    if (!outputs.empty()) {
      for (int64_t i = 0; i < outputs[0].numElements(); ++i) {
        INFO("element " << i);
        CHECK(std::isfinite(outputs[0].at(i)));
      }
      CHECK(outputs[0].at(0) == Approx(0.5).epsilon(outRtol(dtype)));
      CHECK(outputs[0].at(4) == 0.0);
    }
  }
}

void checkConstantRows(Target target) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    for (int64_t length : {64, 1000}) {
      // Constants whose sums are exact in f32 in any order (and exact or
      // rounded to another constant in f16/bf16): the mean is the constant,
      // or within an ulp of it when divided through a reciprocal.
      const std::vector<double> constants = {0, 3.75, -250.25, 1000.5};
      const int64_t rows = static_cast<int64_t>(constants.size());
      CaseBuilder cb(std::string("layer_norm of constant rows, length ") +
                     std::to_string(length) + ", " + dtypeName(dtype));
      std::mt19937_64 rng(length);
      Tensor x(dtype, {rows, length});
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < length; ++j)
          x.set(r * length + j, constants[r]);
      Tensor w = random(dtype, {length}, rng, 0.5, 1.5);
      Tensor bias = random(dtype, {length}, rng, -0.5, 0.5);
      Tensor zeros(dtype, {rows, length});
      std::string vx = cb.input("x", x), vw = cb.input("w", w),
                  vb = cb.input("b", bias), vz = cb.input("zeros", zeros);
      // The f64 reference is the bias exactly. A mean off by one ulp u of
      // the constant c gives (x - mean) / sqrt(u^2 + eps) * w, at most
      // ulp(1000.5) / sqrt(1e-5) * 1.5 ~ 0.03 in f32: never NaN, never far.
      Bound constantBound{5e-2, outRtol(dtype), 0};
      cb.output(cb.b.op("layer_norm", {vx, vw, vb}), "layer_norm(x, w, b)",
                ref::layerNorm(x, &w, &bias, -1, 1e-5), dtype, constantBound);
      cb.output(cb.b.op("rms_norm", {vz, vw}), "rms_norm(zeros, w)",
                ref::rmsNorm(zeros, &w, -1, 1e-5), dtype, Bound{});
      cb.output(cb.b.op("layer_norm", {vz, vw, vb}), "layer_norm(zeros, w, b)",
                ref::layerNorm(zeros, &w, &bias, -1, 1e-5), dtype, Bound{});
      std::vector<Tensor> outputs = runCase(cb.finish(), target);
      if (!outputs.empty()) {
        int64_t nonFinite = 0;
        for (int64_t i = 0; i < outputs[0].numElements(); ++i)
          nonFinite += !std::isfinite(outputs[0].at(i));
        CHECK(nonFinite == 0);
        // A row of zeros has mean 0 exactly: the bias exactly.
        for (int64_t j = 0; j < length; ++j) {
          INFO("column " << j);
          CHECK(outputs[0].at(j) == bias.at(j));
        }
      }
    }
  }
}

void checkLengthOneAxes(Target target) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    std::mt19937_64 rng(5);
    Tensor x = random(dtype, {5, 1}, rng, -3, 3);
    Tensor t = random(dtype, {1, 5}, rng, -3, 3);
    Tensor w = random(dtype, {1}, rng, 0.5, 1.5);
    Tensor bias = random(dtype, {1}, rng, -0.5, 0.5);
    CaseBuilder cb(std::string("length-1 axes, ") + dtypeName(dtype));
    std::string vx = cb.input("x", x), vt = cb.input("t", t),
                vw = cb.input("w", w), vb = cb.input("b", bias);
    cb.output(cb.b.op("softmax", {vx}), "softmax over a length-1 axis",
              ref::softmax(x, -1), dtype, Bound{});
    cb.output(cb.b.op("log_softmax", {vx}), "log_softmax over a length-1 axis",
              ref::logSoftmax(x, -1), dtype, Bound{});
    cb.output(cb.b.op("softmax", {vt}, {{"axis", int64_t(0)}}),
              "softmax over axis 0 of 1x5", ref::softmax(t, 0), dtype, Bound{});
    cb.output(cb.b.op("layer_norm", {vx, vw, vb}),
              "layer_norm over a length-1 axis (the bias)",
              ref::layerNorm(x, &w, &bias, -1, 1e-5), dtype,
              normBound(dtype, 1));
    cb.output(cb.b.op("rms_norm", {vx, vw}), "rms_norm over a length-1 axis",
              ref::rmsNorm(x, &w, -1, 1e-5), dtype, normBound(dtype, 1));
    addReduction(cb, ref::ReduceKind::Sum, vx, x, A({1}), false);
    addReduction(cb, ref::ReduceKind::LogSumExp, vx, x, A({-1}), true);
    addReduction(cb, ref::ReduceKind::L2, vt, t, A({0}), false);
    runCase(cb.finish(), target);
  }
}

void checkZeroSizeDims(Target target) {
  using K = ref::ReduceKind;
  for (DType dtype : {DType::F32, DType::I32, DType::BF16}) {
    {
      CaseBuilder cb(std::string("empty reduced set, 3x0 axes [1], ") +
                     dtypeName(dtype));
      Tensor x(dtype, {3, 0});
      std::string vx = cb.input("x", x);
      std::vector<K> kinds = {K::Sum, K::Prod, K::Max, K::Min};
      if (isFloat(dtype))
        kinds.insert(kinds.end(), {K::Mean, K::L2, K::LogSumExp});
      for (K kind : kinds) {
        addReduction(cb, kind, vx, x, A({1}), true);
        addReduction(cb, kind, vx, x, A({-1}), false);
      }
      // All axes of a tensor with a zero dim: a scalar identity.
      Tensor y(dtype, {2, 0, 3});
      std::string vy = cb.input("y", y);
      addReduction(cb, K::Sum, vy, y, std::nullopt, false);
      addReduction(cb, K::Max, vy, y, std::nullopt, true);
      std::vector<Tensor> outputs = runCase(cb.finish(), target);
      if (outputs.size() >= 8) {
        // Spelled out: sum 0, prod 1, max -inf / dtype min, min +inf / max.
        double lowest = isFloat(dtype) ? -kInf : ref::intMin(dtype);
        double highest = isFloat(dtype) ? kInf : ref::intMax(dtype);
        for (int64_t i = 0; i < 3; ++i) {
          CHECK(outputs[0].at(i) == 0);
          CHECK(outputs[2].at(i) == 1);
          CHECK(outputs[4].at(i) == lowest);
          CHECK(outputs[6].at(i) == highest);
        }
        if (isFloat(dtype) && outputs.size() >= 14) {
          CHECK(std::isnan(outputs[8].at(0))); // mean
          CHECK(outputs[10].at(0) == 0);       // l2
          CHECK(outputs[12].at(0) == -kInf);   // log_sum_exp
        }
      }
    }
    {
      CaseBuilder cb(std::string("empty kept dim, 0x4, ") + dtypeName(dtype));
      Tensor x(dtype, {0, 4});
      std::string vx = cb.input("x", x);
      addReduction(cb, K::Sum, vx, x, A({1}), true);
      addReduction(cb, K::Max, vx, x, A({-1}), false);
      if (isFloat(dtype)) {
        addReduction(cb, K::Mean, vx, x, A({1}), false);
        cb.output(cb.b.op("softmax", {vx}), "softmax of 0x4",
                  ref::softmax(x, -1), dtype, Bound{});
        cb.output(cb.b.op("layer_norm", {vx}), "layer_norm of 0x4",
                  ref::layerNorm(x, nullptr, nullptr, -1, 1e-5), dtype,
                  Bound{});
      }
      runCase(cb.finish(), target);
    }
  }
}

void checkNaNPropagation(Target target) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (int64_t length : {37, 1000, 100000}) {
      std::mt19937_64 rng(length * 3);
      const int64_t rows = 6;
      Tensor x = random(dtype, {rows, length}, rng, -2, 2);
      x.set(0 * length + 0, kNaN);          // first
      x.set(1 * length + length / 2, kNaN); // middle
      x.set(2 * length + length - 1, kNaN); // last
      x.set(3 * length + 1, kInf);          // +inf and NaN
      x.set(3 * length + length - 2, kNaN);
      x.set(4 * length + 3, kInf); // infinities, no NaN
      x.set(4 * length + 5, -kInf);
      // Row 5 finite.
      CaseBuilder cb(std::string("NaN propagation, length ") +
                     std::to_string(length) + ", " + dtypeName(dtype));
      std::string vx = cb.input("x", x);
      using K = ref::ReduceKind;
      for (K kind : {K::Max, K::Min})
        addReduction(cb, kind, vx, x, A({-1}), false);
      for (K kind : {K::Max, K::Min})
        addReduction(cb, kind, vx, x, A({0}), true);        // columns
      addReduction(cb, K::Max, vx, x, std::nullopt, false); // everything
      addReduction(cb, K::Sum, vx, x, A({-1}), false);
      cb.output(cb.b.op("softmax", {vx}), "softmax", ref::softmax(x, -1), dtype,
                softmaxBound(dtype, length));
      std::vector<Tensor> outputs = runCase(cb.finish(), target);
      if (outputs.size() >= 5) {
        for (int64_t r : {0, 1, 2, 3}) {
          INFO("row " << r);
          CHECK(std::isnan(outputs[0].at(r)));
          CHECK(std::isnan(outputs[1].at(r)));
        }
        CHECK(outputs[0].at(4) == kInf);
        CHECK(outputs[1].at(4) == -kInf);
        CHECK(std::isnan(outputs[2].at(0)));          // column 0
        CHECK(std::isnan(outputs[3].at(length / 2))); // column length/2
        CHECK(std::isnan(outputs[4].at(0)));
      }
    }
  }
}

void checkLogSumExpInfinities(Target target) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F64}) {
    for (int64_t length : {5, 1000}) {
      std::mt19937_64 rng(length + 77);
      const int64_t rows = 7;
      Tensor x = random(dtype, {rows, length}, rng, -3, 3);
      for (int64_t j = 0; j < length; ++j) {
        if (j % 2 == 0)
          x.set(0 * length + j, -kInf); // some -inf: ignored
        x.set(1 * length + j, -kInf);   // all -inf: log(0) = -inf
      }
      x.set(2 * length + length - 1, kInf); // +inf last: +inf
      x.set(3 * length + 0, -kInf);         // -inf and +inf: +inf
      x.set(3 * length + 1, kInf);
      x.set(4 * length + 0, kInf);          // +inf first
      x.set(5 * length + length / 2, kNaN); // NaN: NaN
      // Row 6 finite.
      CaseBuilder cb(std::string("reduce_log_sum_exp with infinities, "
                                 "length ") +
                     std::to_string(length) + ", " + dtypeName(dtype));
      std::string vx = cb.input("x", x);
      addReduction(cb, ref::ReduceKind::LogSumExp, vx, x, A({-1}), false);
      std::vector<Tensor> outputs = runCase(cb.finish(), target);
      if (!outputs.empty()) {
        CHECK(std::isfinite(outputs[0].at(0)));
        CHECK(outputs[0].at(1) == -kInf);
        CHECK(outputs[0].at(2) == kInf);
        CHECK(outputs[0].at(3) == kInf);
        CHECK(outputs[0].at(4) == kInf);
        CHECK(std::isnan(outputs[0].at(5)));
        CHECK(std::isfinite(outputs[0].at(6)));
      }
    }
  }
}

void checkIntegerProducts(Target target) {
  struct IntCase {
    DType dtype;
    Shape shape;
    std::vector<int64_t> values, rowProducts;
  };
  const IntCase cases[] = {
      {DType::I8,
       {5, 3},
       {2, 3, -4, 16, 16, 1, 100, 3, 1, -1, -1, -1, 127, -128, 1},
       {-24, 0 /* 256 */, 44 /* 300 - 256 */, -1, -128 /* -16256 wraps */}},
      {DType::I32,
       {3, 3},
       {65536, 65536, 1, 46341, 46341, 1, -7, 11, 13},
       {0 /* 2^32 */, -2147479015 /* 46341^2 - 2^32 */, -1001}},
      {DType::I64,
       {3, 3},
       {int64_t(1) << 31, int64_t(1) << 33, 1, 3, 5, -7, (int64_t(1) << 32) + 1,
        (int64_t(1) << 32) - 1, 1},
       {0 /* 2^64 */, -105, -1 /* 2^64 - 1 */}},
  };
  for (const IntCase &ic : cases) {
    Tensor x(ic.dtype, ic.shape);
    for (size_t i = 0; i < ic.values.size(); ++i)
      ref::setInt(x, i, ic.values[i]);
    CaseBuilder cb(std::string("reduce_prod of ints, ") + dtypeName(ic.dtype));
    std::string vx = cb.input("x", x);
    addReduction(cb, ref::ReduceKind::Prod, vx, x, A({1}), false);
    addReduction(cb, ref::ReduceKind::Prod, vx, x, A({0}), true);
    addReduction(cb, ref::ReduceKind::Prod, vx, x, std::nullopt, false);
    // The reference agrees with the hand-computed products...
    Tensor rows = ref::reduce(ref::ReduceKind::Prod, x, A({1}), false);
    for (size_t r = 0; r < ic.rowProducts.size(); ++r)
      CHECK(ref::intAt(rows, r) == ic.rowProducts[r]);
    // ...and fusec agrees with both.
    std::vector<Tensor> outputs = runCase(cb.finish(), target);
    if (!outputs.empty())
      for (size_t r = 0; r < ic.rowProducts.size(); ++r) {
        INFO("row " << r);
        CHECK(ref::intAt(outputs[0], r) == ic.rowProducts[r]);
      }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// The reference itself, against values worked out by hand
//===----------------------------------------------------------------------===//

TEST_CASE("the f64 reference agrees with hand-computed values", "[reduction]") {
  Tensor x = fromValues(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto values = [](const Tensor &t) {
    std::vector<double> v;
    for (int64_t i = 0; i < t.numElements(); ++i)
      v.push_back(t.at(i));
    return v;
  };
  using K = ref::ReduceKind;
  using V = std::vector<double>;
  CHECK(values(ref::reduce(K::Sum, x, A({1}), true)) == V{6, 15});
  CHECK(ref::reduce(K::Sum, x, A({1}), true).shape == Shape{2, 1});
  CHECK(ref::reduce(K::Sum, x, A({-1}), false).shape == Shape{2});
  CHECK(values(ref::reduce(K::Sum, x, A({0}), false)) == V{5, 7, 9});
  CHECK(values(ref::reduce(K::Sum, x, std::nullopt, false)) == V{21});
  CHECK(ref::reduce(K::Sum, x, std::nullopt, true).shape == Shape{1, 1});
  CHECK(ref::reduce(K::Sum, x, std::nullopt, false).shape == Shape{});
  CHECK(values(ref::reduce(K::Sum, x, A({}), false, true)) ==
        V{1, 2, 3, 4, 5, 6});
  CHECK(values(ref::reduce(K::Mean, x, A({0}), false)) == V{2.5, 3.5, 4.5});
  CHECK(values(ref::reduce(K::Max, x, A({1}), false)) == V{3, 6});
  CHECK(values(ref::reduce(K::Min, x, A({0}), false)) == V{1, 2, 3});
  CHECK(values(ref::reduce(K::Prod, x, A({1}), false)) == V{6, 120});
  CHECK(ref::reduce(K::L2, x, A({1}), false).at(0) ==
        Approx(std::sqrt(14.0)).epsilon(1e-15));
  CHECK(ref::reduce(K::LogSumExp, x, A({1}), false).at(1) ==
        Approx(std::log(std::exp(4.0) + std::exp(5.0) + std::exp(6.0)))
            .epsilon(1e-15));

  // 3-D, axes {0, 2}: sums over i and k of x[i][j][k] = 100 i + 10 j + k.
  Tensor y(DType::F64, {2, 3, 4});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k)
        y.set((i * 3 + j) * 4 + k, 100 * i + 10 * j + k);
  // For each j: sum over i, k = 4*(0+100) + 2*4*10j + 2*(0+1+2+3).
  CHECK(values(ref::reduce(K::Sum, y, A({0, 2}), false)) == V{412, 492, 572});
  CHECK(values(ref::reduce(K::Max, y, A({-1, 0}), true)) == V{103, 113, 123});
  CHECK(ref::reduce(K::Max, y, A({-1, 0}), true).shape == Shape{1, 3, 1});
  CHECK(values(ref::reduce(K::Min, y, A({1}), false)) ==
        V{0, 1, 2, 3, 100, 101, 102, 103});

  // Empty reduced sets and NaN.
  Tensor empty(DType::F32, {2, 0});
  CHECK(values(ref::reduce(K::Sum, empty, A({1}), false)) == V{0, 0});
  CHECK(values(ref::reduce(K::Prod, empty, A({1}), false)) == V{1, 1});
  CHECK(values(ref::reduce(K::Max, empty, A({1}), false)) == V{-kInf, -kInf});
  CHECK(values(ref::reduce(K::Min, empty, A({1}), false)) == V{kInf, kInf});
  CHECK(std::isnan(ref::reduce(K::Mean, empty, A({1}), false).at(0)));
  CHECK(ref::reduce(K::LogSumExp, empty, A({1}), false).at(0) == -kInf);
  Tensor emptyInts(DType::I8, {0, 2});
  CHECK(ref::reduce(K::Max, emptyInts, A({0}), false).at(0) == -128);
  CHECK(ref::reduce(K::Min, emptyInts, A({0}), false).at(1) == 127);
  Tensor withNaN = fromValues(DType::F32, {1, 3}, {1, kNaN, 3});
  CHECK(std::isnan(ref::reduce(K::Max, withNaN, A({1}), false).at(0)));
  CHECK(std::isnan(ref::reduce(K::Min, withNaN, A({1}), false).at(0)));

  // Integer wraparound: i8 sum 100 + 100 = 200 wraps to -56.
  Tensor bytes = fromValues(DType::I8, {2}, {100, 100});
  CHECK(ref::reduce(K::Sum, bytes, std::nullopt, false).at(0) == -56);
  CHECK(ref::reduce(K::Prod, bytes, std::nullopt, false).at(0) == 16);
  Tensor ints = fromValues(DType::I32, {4}, {-7, 2, 0, 0});
  CHECK(ref::reduce(K::Mean, ints, std::nullopt, false).at(0) == -1);
  CHECK(ref::reduce(K::L2, ints, std::nullopt, false).at(0) == 7);

  // softmax / log_softmax along an axis, and the NaN row of all -inf.
  Tensor s = fromValues(DType::F64, {2, 2}, {0, std::log(3.0), -kInf, -kInf});
  Tensor soft = ref::softmax(s, -1);
  CHECK(soft.at(0) == Approx(0.25));
  CHECK(soft.at(1) == Approx(0.75));
  CHECK(std::isnan(soft.at(2)));
  CHECK(ref::logSoftmax(s, 1).at(0) == Approx(std::log(0.25)));
  Tensor column = ref::softmax(s, 0);
  CHECK(column.at(0) == 1);
  CHECK(column.at(2) == 0);

  // layer_norm of [1, 3]: mean 2, var 1 -> [-1, 1] / sqrt(1 + eps).
  Tensor l = fromValues(DType::F64, {1, 2}, {1, 3});
  Tensor weight = fromValues(DType::F64, {2}, {2, 3});
  Tensor bias = fromValues(DType::F64, {1}, {0.5});
  Tensor normalized = ref::layerNorm(l, &weight, &bias, -1, 0.0);
  CHECK(values(normalized) == V{-1.5, 3.5});
  // rms_norm of [3, 4]: rms = sqrt(12.5).
  Tensor m = fromValues(DType::F64, {2}, {3, 4});
  CHECK(ref::rmsNorm(m, nullptr, 0, 0.0).at(1) ==
        Approx(4 / std::sqrt(12.5)).epsilon(1e-15));
  // gelu(1) = Phi(1) = 0.8413447460685429; tanh form 0.8411919906082768.
  Tensor one = fromValues(DType::F64, {1}, {1});
  CHECK(ref::gelu(one, false).at(0) == Approx(0.8413447460685429));
  CHECK(ref::gelu(one, true).at(0) == Approx(0.8411919906082768));
  CHECK(ref::silu(one).at(0) == Approx(1 / (1 + std::exp(-1.0))));
}

//===----------------------------------------------------------------------===//
// CPU
//===----------------------------------------------------------------------===//

#define REDUCTION_DTYPE_TEST(dtype)                                            \
  TEST_CASE("reductions on " #dtype " match the f64 reference",                \
            "[reduction]") {                                                   \
    checkReductions(DType::dtype, Target::Cpu);                                \
  }                                                                            \
  TEST_CASE("reductions on " #dtype " match the f64 reference on the GPU",     \
            "[reduction][gpu]") {                                              \
    FUSEC_SKIP_IF(cuda::unavailableReason());                                  \
    checkReductions(DType::dtype, Target::Cuda);                               \
  }
REDUCTION_DTYPE_TEST(F64)
REDUCTION_DTYPE_TEST(F32)
REDUCTION_DTYPE_TEST(F16)
REDUCTION_DTYPE_TEST(BF16)
REDUCTION_DTYPE_TEST(I8)
REDUCTION_DTYPE_TEST(I32)
REDUCTION_DTYPE_TEST(I64)
REDUCTION_DTYPE_TEST(I16)
REDUCTION_DTYPE_TEST(U8)
REDUCTION_DTYPE_TEST(U16)
REDUCTION_DTYPE_TEST(U32)
REDUCTION_DTYPE_TEST(U64)

#define COMPOSITE_DTYPE_TEST(dtype)                                            \
  TEST_CASE("softmax log_softmax layer_norm rms_norm gelu silu on " #dtype     \
            " match the f64 reference",                                        \
            "[reduction]") {                                                   \
    checkComposites(DType::dtype, Target::Cpu);                                \
  }                                                                            \
  TEST_CASE("softmax log_softmax layer_norm rms_norm gelu silu on " #dtype     \
            " match the f64 reference on the GPU",                             \
            "[reduction][gpu]") {                                              \
    FUSEC_SKIP_IF(cuda::unavailableReason());                                  \
    checkComposites(DType::dtype, Target::Cuda);                               \
  }
COMPOSITE_DTYPE_TEST(F64)
COMPOSITE_DTYPE_TEST(F32)
COMPOSITE_DTYPE_TEST(F16)
COMPOSITE_DTYPE_TEST(BF16)

static void combinations(Target target) {
  for (DType dtype : {DType::F32, DType::BF16})
    checkCombinations(dtype, target);
}
REDUCTION_TARGET_TEST("reductions and composites combine with pointwise ops",
                      combinations)
REDUCTION_TARGET_TEST("softmax and log_softmax of rows with -inf",
                      checkInfinitiesInSoftmax)
REDUCTION_TARGET_TEST("huge values do not overflow softmax log_softmax or "
                      "reduce_log_sum_exp",
                      checkHugeValues)
REDUCTION_TARGET_TEST("layer_norm of constant rows is the bias and never NaN",
                      checkConstantRows)
REDUCTION_TARGET_TEST("length-1 axes", checkLengthOneAxes)
REDUCTION_TARGET_TEST("zero-size dims: identities and empty outputs",
                      checkZeroSizeDims)
REDUCTION_TARGET_TEST("NaN propagates through reduce_max reduce_min "
                      "reduce_sum and softmax",
                      checkNaNPropagation)
REDUCTION_TARGET_TEST("reduce_log_sum_exp with -inf and +inf entries",
                      checkLogSumExpInfinities)
REDUCTION_TARGET_TEST("reduce_prod of ints wraps like the dtype",
                      checkIntegerProducts)

namespace {

/// reduce_sum and reduce_mean of rows of -0.0 are -0.0 (NumPy's sums start
/// from the first term); a sum over an empty dim is +0.0.
void checkSignedZeroSums(Target target) {
  GraphBuilder b("signed_zero_sums");
  std::string x = b.input("x", DType::F32, {2, 3});
  std::string empty = b.input("empty", DType::F32, {3, 0});
  Attrs rows = reduceAttrs(A({1}), false);
  b.output(b.op("reduce_sum", {x}, rows));
  b.output(b.op("reduce_mean", {x}, rows));
  b.output(b.op("reduce_sum", {empty}, rows));
  Tensor values =
      fromValues(DType::F32, {2, 3}, {-0.0, -0.0, -0.0, -0.0, 0.0, -0.0});
  std::vector<Tensor> outputs =
      compile(b.build(), test::testOptions(true, target))
          .run({values, Tensor(DType::F32, {3, 0})});
  REQUIRE(outputs.size() == 3);
  for (int k = 0; k < 2; ++k) {
    INFO("output " << k);
    CHECK(outputs[k].at(0) == 0.0);
    CHECK(std::signbit(outputs[k].at(0)));       // all -0.0
    CHECK_FALSE(std::signbit(outputs[k].at(1))); // -0.0 + 0.0 is +0.0
  }
  for (int64_t i = 0; i < 3; ++i) {
    CHECK(outputs[2].at(i) == 0.0);
    CHECK_FALSE(std::signbit(outputs[2].at(i)));
  }
}

} // namespace

REDUCTION_TARGET_TEST("sums of -0.0 are -0.0 and an empty sum is +0.0",
                      checkSignedZeroSums)
