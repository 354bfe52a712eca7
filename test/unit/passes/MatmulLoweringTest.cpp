//===- MatmulLoweringTest.cpp - The programs of matmuls ------------------===//
//
// What a matmul lowers to on each target: library calls (transposes, bias
// and activation folded into them) and kernels, and the remarks saying what
// each call folded.
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
