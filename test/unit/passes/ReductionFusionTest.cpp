//===- ReductionFusionTest.cpp - One kernel per normalization -----------===//
//
// softmax, log_softmax, layer_norm (alone and after an add), rms_norm with
// a mul and layer_norm with gelu: each is one kernel, and computes the f64
// reference's numbers (test/unit/support/ReductionCases.h).
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

void checkFusionStructure(DType dtype, Target target) {
  const int64_t rows = 64, columns = 1000;
  std::mt19937_64 rng(99);
  Tensor x = random(dtype, {rows, columns}, rng, -2.5, 3.5);
  Tensor r = random(dtype, {rows, columns}, rng, -1, 1);
  Tensor w = random(dtype, {columns}, rng, 0.5, 1.5);
  Tensor bias = random(dtype, {columns}, rng, -0.5, 0.5);
  int64_t n = columns;
  Tensor ln = ref::layerNorm(x, &w, &bias, -1, 1e-5);

  struct Structure {
    Case c;
    size_t outputsOfTheKernel;
  };
  std::vector<Structure> structures;
  auto start = [&](const std::string &label) {
    return CaseBuilder(label + ", " + dtypeName(dtype));
  };
  {
    CaseBuilder cb = start("softmax");
    cb.output(cb.b.op("softmax", {cb.input("x", x)}), "softmax",
              ref::softmax(x, -1), dtype, softmaxBound(dtype, n));
    structures.push_back({cb.finish(), 1});
  }
  {
    CaseBuilder cb = start("log_softmax");
    cb.output(cb.b.op("log_softmax", {cb.input("x", x)}), "log_softmax",
              ref::logSoftmax(x, -1), dtype, logSoftmaxBound(dtype, n));
    structures.push_back({cb.finish(), 1});
  }
  {
    CaseBuilder cb = start("layer_norm with weight and bias");
    std::string vx = cb.input("x", x), vw = cb.input("w", w),
                vb = cb.input("b", bias);
    cb.output(cb.b.op("layer_norm", {vx, vw, vb}), "layer_norm", ln, dtype,
              normBound(dtype, n));
    structures.push_back({cb.finish(), 1});
  }
  {
    CaseBuilder cb = start("add then layer_norm, the sum an output too");
    std::string vx = cb.input("x", x), vr = cb.input("r", r),
                vw = cb.input("w", w), vb = cb.input("b", bias);
    std::string sum = cb.b.op("add", {vx, vr});
    Tensor sumRef = ref::zip(x, r, addF);
    // The normalized sum is computed from the sum rounded to the dtype (as
    // the graph's own output holds it) or from the f32 sum; either is within
    // half an ulp of the dtype, which layer_norm scales by 1/std ~ 1.
    Bound bound = normBound(dtype, n);
    bound.atol += 4 * outRtol(dtype);
    cb.output(cb.b.op("layer_norm", {sum, vw, vb}), "layer_norm(x + r)",
              ref::layerNorm(ref::castTo(sumRef, dtype), &w, &bias, -1, 1e-5),
              dtype, bound);
    cb.output(sum, "x + r", sumRef, dtype, pointwiseBound(dtype));
    structures.push_back({cb.finish(), 2});
  }
  {
    CaseBuilder cb = start("rms_norm with weight");
    std::string vx = cb.input("x", x), vw = cb.input("w", w);
    cb.output(cb.b.op("rms_norm", {vx, vw}), "rms_norm(x, w)",
              ref::rmsNorm(x, &w, -1, 1e-5), dtype, normBound(dtype, n));
    structures.push_back({cb.finish(), 1});
  }
  {
    CaseBuilder cb = start("rms_norm times weight");
    std::string vx = cb.input("x", x), vw = cb.input("w", w);
    cb.output(cb.b.op("mul", {cb.b.op("rms_norm", {vx}), vw}),
              "rms_norm(x) * w", ref::rmsNorm(x, &w, -1, 1e-5), dtype,
              normBound(dtype, n));
    structures.push_back({cb.finish(), 1});
  }
  for (const char *approximate : {"none", "tanh"}) {
    CaseBuilder cb = start(std::string("layer_norm then gelu ") + approximate);
    std::string vx = cb.input("x", x), vw = cb.input("w", w),
                vb = cb.input("b", bias);
    Bound bound = normBound(dtype, n);
    bound.atol *= 1.2;
    bound.rtol = 1.2 * bound.rtol + outRtol(dtype);
    cb.output(cb.b.op("gelu", {cb.b.op("layer_norm", {vx, vw, vb})},
                      {{"approximate", std::string(approximate)}}),
              "gelu(layer_norm(x, w, b))",
              ref::gelu(ln, std::string(approximate) == "tanh"), dtype, bound);
    structures.push_back({cb.finish(), 1});
  }

  for (const Structure &s : structures) {
    INFO("case: " << s.c.label << " (" << targetName(target) << ")");
    std::vector<Tensor> fused = runCase(s.c, target);
    try {
      CompiledModel model = compile(s.c.graph, test::testOptions(true, target));
      std::ostringstream kernels;
      for (const KernelInfo &kernel : model.kernels()) {
        kernels << "\n  " << kernel.name << ":";
        for (const std::string &op : kernel.ops)
          kernels << " " << op;
      }
      INFO("kernels:" << kernels.str());
      if (target == Target::Cpu) {
        CHECK(model.program().kernels.size() == 1);
        CHECK(model.kernels().size() == 1);
        if (model.program().kernels.size() == 1)
          CHECK(model.program().kernels[0].outputs.size() ==
                s.outputsOfTheKernel);
      }
      CHECK(model.program().outputs.size() == s.outputsOfTheKernel);
      // Fused against unfused, with fusec's own tolerance.
      std::vector<Tensor> unfused =
          compile(s.c.graph, test::testOptions(false, target)).run(s.c.inputs);
      CHECK(fused.size() == unfused.size());
      for (size_t i = 0; i < std::min(fused.size(), unfused.size()); ++i) {
        Comparison comparison = compareTensors(fused[i], unfused[i]);
        INFO("output " << i << " fused vs unfused: "
                       << test::describeMismatch(fused[i], unfused[i],
                                                 comparison));
        CHECK(comparison.ok());
      }
    } catch (const std::exception &error) {
      FAIL_CHECK("compile/run threw: " << error.what());
    }
  }
}

} // namespace

static void fusionStructure(Target target) {
  for (DType dtype : {DType::F32, DType::BF16})
    checkFusionStructure(dtype, target);
}
REDUCTION_TARGET_TEST("softmax layer_norm add+layer_norm rms_norm+mul "
                      "layer_norm+gelu are one kernel each",
                      fusionStructure)
