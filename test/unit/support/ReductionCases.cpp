//===- ReductionCases.cpp - Reduction test cases against f64 -------------===//

#include "test/unit/support/ReductionCases.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace fusec::test::reduction {

Axes A(std::vector<int64_t> axes) { return Axes(std::move(axes)); }

double outRtol(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return 1e-13;
  case DType::F32:
    return 2e-6;
  case DType::F16:
    return 2e-3;
  case DType::BF16:
    return 1e-2;
  default:
    return 0;
  }
}

double accTol(DType dtype, int64_t n) {
  double growth = 1 + std::sqrt(static_cast<double>(std::max<int64_t>(n, 1)));
  switch (dtype) {
  case DType::F64:
    return 1e-14 * growth;
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    return 1e-6 * growth;
  default:
    return 0;
  }
}

double pointwiseAtol(DType dtype) { return dtype == DType::F64 ? 1e-14 : 1e-6; }
double subnormalAtol(DType dtype) { return dtype == DType::F16 ? 6e-8 : 0; }

Bound widenForUnfused(Bound bound, DType dtype) {
  if (bound.exact() || (dtype != DType::F16 && dtype != DType::BF16))
    return bound;
  Tolerance loose = toleranceFor(dtype);
  bound.atol = std::max(5 * bound.atol, loose.atol);
  bound.rtol = std::max(5 * bound.rtol, loose.rtol);
  bound.scaleTol *= 5;
  return bound;
}

Case mergeCases(std::vector<Case> cases, const std::string &label) {
  Case merged;
  merged.label = label;
  merged.graph.name = "reduction";
  for (size_t i = 0; i < cases.size(); ++i) {
    Case &c = cases[i];
    test::appendRenamedGraph(merged.graph, c.graph,
                             "c" + std::to_string(i) + "_");
    for (Tensor &input : c.inputs)
      merged.inputs.push_back(std::move(input));
    for (Expectation &e : c.expected) {
      e.label = c.label + ": " + e.label;
      merged.expected.push_back(std::move(e));
    }
  }
  return merged;
}

std::string describeIndex(const Shape &shape, int64_t index) {
  std::ostringstream os;
  os << index << " [";
  Shape coordinate(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coordinate[d] = shape[d] ? index % shape[d] : 0;
    index = shape[d] ? index / shape[d] : 0;
  }
  for (size_t d = 0; d < shape.size(); ++d)
    os << (d ? "," : "") << coordinate[d];
  os << "]";
  return os.str();
}

void checkOutput(const Tensor &actual, const Expectation &e,
                 const Bound &bound) {
  INFO("output '" << e.label << "' expected " << dtypeName(e.dtype) << "["
                  << formatShape(e.expected.shape) << "], got "
                  << actual.typeString());
  CHECK(actual.dtype == e.dtype);
  CHECK(actual.shape == e.expected.shape);
  if (actual.dtype != e.dtype || actual.shape != e.expected.shape)
    return;
  bool integer = !isFloat(e.dtype);
  // An exact result beyond the dtype's range is its rounding, +-inf.
  Tensor scratch(e.dtype, {1});
  auto overflowed = [&](double value) {
    if (!std::isfinite(value) || e.dtype == DType::F64)
      return value;
    scratch.set(0, value);
    double rounded = scratch.at(0);
    return std::isfinite(rounded) ? value : rounded;
  };
  int64_t mismatches = 0, first = -1;
  double worstRatio = 0;
  int64_t worst = -1;
  for (int64_t i = 0; i < actual.numElements(); ++i) {
    if (integer) {
      if (ref::intAt(actual, i) != ref::intAt(e.expected, i) &&
          mismatches++ == 0)
        first = i;
      continue;
    }
    double a = actual.at(i), x = overflowed(e.expected.at(i));
    if ((std::isnan(a) && std::isnan(x)) || a == x)
      continue;
    double allowed = bound.atol + bound.rtol * std::fabs(x) +
                     (e.scale ? bound.scaleTol * e.scale->at(i) : 0.0);
    double error = std::fabs(a - x);
    bool ok = std::isfinite(a) && std::isfinite(x) && error <= allowed;
    double ratio = allowed > 0 ? error / allowed : kInf;
    if (!ok) {
      if (mismatches++ == 0)
        first = i;
      ratio = std::isnan(ratio) ? kInf : ratio;
    }
    if (ratio > worstRatio || worst < 0) {
      worstRatio = ratio;
      worst = i;
    }
  }
  std::ostringstream message;
  message.precision(10);
  message << mismatches << " of " << actual.numElements()
          << " elements outside the bound (atol " << bound.atol << ", rtol "
          << bound.rtol << ", scaleTol " << bound.scaleTol << ")";
  auto describe = [&](int64_t i) {
    message << " at element " << describeIndex(actual.shape, i) << ": got "
            << actual.at(i) << ", expected " << e.expected.at(i);
    if (e.scale)
      message << " (scale " << e.scale->at(i) << ")";
  };
  if (first >= 0) {
    message << "; first";
    describe(first);
  }
  if (worst >= 0 && !integer) {
    message << "; worst error/allowed " << worstRatio;
    describe(worst);
  }
  INFO(message.str());
  CHECK(mismatches == 0);
}

void compileForGpusChecked(const Graph &graph) {
  try {
    test::compileForGpus(graph, /*everyVariant=*/false);
  } catch (const std::exception &error) {
    FAIL_CHECK("lowering for CUDA threw: " << error.what());
  }
}

std::vector<Tensor> runCase(const Case &c, Target target, bool unfusedToo) {
  INFO("case: " << c.label << " (" << targetName(target) << ")");
  if (target == Target::Cpu)
    compileForGpusChecked(c.graph);
  std::vector<Tensor> fusedOutputs;
  for (bool fuse : {true, false}) {
    // On the GPU the fused kernels are the subject; unfused execution is
    // checked on the CPU (NVRTC would spend minutes on hundreds of kernels).
    if (!fuse && (!unfusedToo || target == Target::Cuda))
      continue;
    INFO((fuse ? "fused" : "unfused"));
    std::vector<Tensor> outputs;
    try {
      CompiledModel model = compile(c.graph, test::testOptions(fuse, target));
      outputs = model.run(c.inputs);
    } catch (const std::exception &error) {
      FAIL_CHECK("compile/run threw: " << error.what());
      continue;
    }
    CHECK(outputs.size() == c.expected.size());
    if (outputs.size() != c.expected.size())
      continue;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Expectation &e = c.expected[i];
      checkOutput(outputs[i], e,
                  fuse ? e.bound : widenForUnfused(e.bound, e.dtype));
    }
    if (fuse)
      fusedOutputs = std::move(outputs);
  }
  return fusedOutputs;
}

Tensor random(DType dtype, const Shape &shape, std::mt19937_64 &rng, double low,
              double high) {
  return randomTensor(dtype, shape, rng, low, high);
}

Tensor fromValues(DType dtype, const Shape &shape,
                  const std::vector<double> &values) {
  Tensor t(dtype, shape);
  REQUIRE(static_cast<int64_t>(values.size()) == t.numElements());
  for (size_t i = 0; i < values.size(); ++i)
    t.set(i, values[i]);
  return t;
}

Attrs reduceAttrs(const Axes &axes, bool keepdims, bool noop) {
  Attrs attrs{{"keepdims", int64_t(keepdims ? 1 : 0)}};
  if (axes)
    attrs["axes"] = *axes;
  if (noop)
    attrs["noop_with_empty_axes"] = int64_t(1);
  return attrs;
}

int64_t reductionLength(const Shape &shape, const Axes &axes, bool noop) {
  std::vector<int64_t> resolved =
      ref::resolveAxes(axes, static_cast<int64_t>(shape.size()), noop);
  int64_t n = 1;
  for (int64_t axis : resolved)
    n *= shape[axis];
  return n;
}

Expectation reductionExpectation(ref::ReduceKind kind, const Tensor &x,
                                 const Axes &axes, bool keepdims, bool noop) {
  DType dtype = x.dtype;
  int64_t n = reductionLength(x.shape, axes, noop);
  Expectation e{ref::reduceOpName(kind),
                ref::reduce(kind, x, axes, keepdims, noop),
                dtype,
                {},
                std::nullopt};
  if (!isFloat(dtype))
    return e;
  switch (kind) {
  case ref::ReduceKind::Max:
  case ref::ReduceKind::Min:
    break; // exact: the result is one of the inputs
  case ref::ReduceKind::Sum:
  case ref::ReduceKind::Mean: {
    e.bound = {0, outRtol(dtype), accTol(dtype, n)};
    Tensor scale = ref::reductionScale(x, axes, keepdims, noop);
    if (kind == ref::ReduceKind::Mean)
      for (int64_t i = 0; i < scale.numElements(); ++i)
        scale.set(i, scale.at(i) / std::max<int64_t>(n, 1));
    e.scale = std::move(scale);
    break;
  }
  case ref::ReduceKind::Prod:
  case ref::ReduceKind::L2:
    e.bound = {0, outRtol(dtype) + accTol(dtype, n), 0};
    break;
  case ref::ReduceKind::LogSumExp:
    e.bound = {accTol(dtype, n), outRtol(dtype), 0};
    break;
  }
  return e;
}

void addReduction(CaseBuilder &cb, ref::ReduceKind kind,
                  const std::string &value, const Tensor &x, const Axes &axes,
                  bool keepdims, bool noop) {
  std::string out = cb.b.op(ref::reduceOpName(kind), {value},
                            reduceAttrs(axes, keepdims, noop));
  Expectation e = reductionExpectation(kind, x, axes, keepdims, noop);
  cb.output(out, e.label, std::move(e.expected), e.dtype, e.bound,
            std::move(e.scale));
}

Bound softmaxBound(DType dtype, int64_t n) {
  return {subnormalAtol(dtype), outRtol(dtype) + accTol(dtype, n), 0};
}
Bound logSoftmaxBound(DType dtype, int64_t n) {
  return {accTol(dtype, n), outRtol(dtype), 0};
}
Bound normBound(DType dtype, int64_t n) {
  return {accTol(dtype, n) + pointwiseAtol(dtype), outRtol(dtype), 0};
}
Bound pointwiseBound(DType dtype) {
  return {pointwiseAtol(dtype), outRtol(dtype), 0};
}

double addF(double a, double b) { return a + b; }
double subF(double a, double b) { return a - b; }
double mulF(double a, double b) { return a * b; }
double divF(double a, double b) { return a / b; }
double expF(double a) { return std::exp(a); }
double logF(double a) { return std::log(a); }
double sqrtF(double a) { return std::sqrt(a); }

} // namespace fusec::test::reduction
