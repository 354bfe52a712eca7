//===- PrecisionTest.cpp - f32 graphs run in bf16 and f16 ----------------===//
//
// CompileOptions::precision on an f32 transformer block (matmul + bias,
// gelu, softmax, layer norm, a long row sum): the program's matmuls and
// temporaries take the low dtype, its inputs and outputs stay f32, and the
// outputs are held by relative L2 error to the same graph run unfused in
// f32 on the CPU. Every check is a function of the Target: the CPU test
// case and the [gpu] one run the same code.
//
//===----------------------------------------------------------------------===//

#include "test/unit/TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <random>

using namespace fusec;

namespace {

struct Block {
  Graph graph;
  std::string fcNode; ///< the first matmul's node name
  std::vector<Tensor> inputs;
};

/// y = layer_norm(gelu(x @ w + b)) @ w2, softmax(y) and sum(x) over rows
/// of 1024 (a row sum accumulated in the low dtype would be visibly off),
/// and a head read only as an output: layer_norm(...) @ w3.
Block transformerBlock() {
  std::mt19937_64 rng(7);
  GraphBuilder b("precision_block");
  std::string x = b.input("x", DType::F32, {32, 1024});
  std::string w =
      b.constant("w", randomTensor(DType::F32, {1024, 256}, rng, -0.05, 0.05));
  std::string bias =
      b.constant("b", randomTensor(DType::F32, {256}, rng, -0.5, 0.5));
  std::string w2 =
      b.constant("w2", randomTensor(DType::F32, {256, 64}, rng, -0.1, 0.1));
  std::string w3 =
      b.constant("w3", randomTensor(DType::F32, {256, 32}, rng, -0.1, 0.1));
  std::string gamma =
      b.constant("gamma", randomTensor(DType::F32, {256}, rng, 0.5, 1.5));
  std::string beta =
      b.constant("beta", randomTensor(DType::F32, {256}, rng, -0.1, 0.1));
  Block block;
  std::string fc = b.op("matmul", {x, w});
  block.fcNode = b.graph().nodes.back().name;
  std::string activated = b.op("gelu", {b.op("add", {fc, bias})},
                               {{"approximate", std::string("tanh")}});
  std::string normed = b.op("layer_norm", {activated, gamma, beta});
  std::string y = b.op("matmul", {normed, w2});
  b.output(y);
  b.output(b.op("softmax", {y}));
  b.output(b.op("reduce_sum", {x}, {{"axes", std::vector<int64_t>{-1}}}));
  b.output(b.op("matmul", {normed, w3}));
  block.graph = b.build();
  block.inputs.push_back(randomTensor(DType::F32, {32, 1024}, rng));
  return block;
}

/// The bound on the relative L2 error against f32: bf16 keeps 8 bits of
/// mantissa, f16 11.
double relL2Bound(DType precision) {
  return precision == DType::BF16 ? 2e-2 : 5e-3;
}

void checkPrecision(Target target) {
  Block block = transformerBlock();
  CompileOptions referenceOptions = test::testOptions(false, Target::Cpu);
  std::vector<Tensor> expected =
      compile(block.graph, referenceOptions).run(block.inputs);

  for (DType precision : {DType::BF16, DType::F16}) {
    INFO("precision " << dtypeName(precision) << " on " << targetName(target));
    CompileOptions options = test::testOptions(true, target);
    options.precision = precision;
    Program program = lowerGraph(block.graph, options).program;
    for (int input : program.inputs)
      CHECK(program.buffers[input].dtype == DType::F32);
    for (int output : program.outputs)
      CHECK(program.buffers[output].dtype == DType::F32);
    REQUIRE(program.matmuls.size() == 3);
    for (const MatmulCall &call : program.matmuls)
      CHECK(call.dtype == precision);
    // The head (n = 32) writes its f32 accumulator: no cast after it; the
    // others, read in the low dtype, write it.
    for (const MatmulCall &call : program.matmuls)
      CHECK(call.resultDType() == (call.n == 32 ? DType::F32 : precision));
    // The weights are converted when compiling: no f32 constant is left.
    for (const BufferDesc &buffer : program.buffers)
      if (buffer.role == BufferRole::Constant)
        CHECK(buffer.dtype == precision);
    // The boundary casts run inside the kernels around them.
    Program f32Program =
        lowerGraph(block.graph, test::testOptions(true, target)).program;
    CHECK(program.kernels.size() == f32Program.kernels.size());

    std::vector<Tensor> outputs =
        compile(block.graph, options).run(block.inputs);
    REQUIRE(outputs.size() == expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      INFO("output " << i);
      CHECK(outputs[i].dtype == DType::F32);
      CHECK(relativeL2Error(outputs[i], expected[i]) <= relL2Bound(precision));
    }
    // The row sum is accumulated in f32 from the low-dtype x: its error is
    // x's rounding, far inside the bound.
    CHECK(relativeL2Error(outputs[2], expected[2]) <=
          relL2Bound(precision) / 4);

    // A kept node runs in f32: here the first matmul.
    options.keepF32Nodes = {block.fcNode};
    program = lowerGraph(block.graph, options).program;
    for (const MatmulCall &call : program.matmuls)
      CHECK(call.dtype == (call.n == 256 ? DType::F32 : precision));
  }
}

} // namespace

TEST_CASE("relative L2 error and top-1 agreement", "[precision]") {
  Tensor expected(DType::F32, {2, 3});
  Tensor actual(DType::F32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) {
    expected.set(i, i == 1 || i == 5 ? 3.0 : 0.0); // rows' maxima at 1 and 5
    actual.set(i, expected.at(i));
  }
  CHECK(relativeL2Error(actual, expected) == 0);
  CHECK(topOneAgreement(actual, expected) == 1);
  actual.set(1, 2.0); // row 0 still picks element 1
  actual.set(4, 4.0); // row 1 picks element 4: ||(-1, 4)|| / ||(3, 3)||
  CHECK(relativeL2Error(actual, expected) ==
        Approx(std::sqrt(17.0) / std::sqrt(18.0)));
  CHECK(topOneAgreement(actual, expected) == 0.5);
  actual.set(0, NAN);
  CHECK(std::isinf(relativeL2Error(actual, expected)));
  expected.set(0, NAN);
  CHECK(std::isfinite(relativeL2Error(actual, expected)));
}

TEST_CASE("a graph of f32 tensors runs in bf16 and f16", "[precision]") {
  checkPrecision(Target::Cpu);
}

TEST_CASE("a graph of f32 tensors runs in bf16 and f16 on the GPU",
          "[precision][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkPrecision(Target::Cuda);
}
