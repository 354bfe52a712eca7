//===- MatmulCases.cpp - matmul and gemm test cases against f64 ----------===//

#include "test/unit/support/MatmulCases.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace fusec::test::matmul {

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

double unfusedWidening(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 ? 5.0 : 1.0;
}

Tensor toF64(const Tensor &t) {
  Tensor out(DType::F64, t.shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    out.set(i, t.at(i));
  return out;
}

int64_t broadcastIndex(const Shape &shape, const Shape &coordinate) {
  size_t offset = coordinate.size() - shape.size();
  int64_t index = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    index = index * shape[d] + (shape[d] == 1 ? 0 : coordinate[offset + d]);
  return index;
}

Shape coordinateOf(const Shape &shape, int64_t index) {
  Shape coordinate(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coordinate[d] = shape[d] ? index % shape[d] : 0;
    index = shape[d] ? index / shape[d] : 0;
  }
  return coordinate;
}

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

Tensor refGemm(const Tensor &a, const Tensor &b, const Tensor *c, double alpha,
               double beta, bool transA, bool transB) {
  Tensor product = refMatmul(transA ? refTranspose(a, {1, 0}) : toF64(a),
                             transB ? refTranspose(b, {1, 0}) : toF64(b));
  Tensor scaled = refMap(product, [&](double x) { return alpha * x; });
  if (!c)
    return scaled;
  return refZip(scaled, *c, [&](double x, double y) { return x + beta * y; });
}

double relu(double x) { return std::isnan(x) ? x : (x < 0 ? 0.0 : x); }
double geluErf(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double geluTanh(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
}

std::string describeCoordinate(const Shape &shape, int64_t index) {
  std::ostringstream os;
  os << index << " [";
  Shape coordinate = coordinateOf(shape, index);
  for (size_t d = 0; d < coordinate.size(); ++d)
    os << (d ? "," : "") << coordinate[d];
  os << "]";
  return os.str();
}

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

} // namespace fusec::test::matmul
