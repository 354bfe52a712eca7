//===- ApiTest.cpp - The library API: compile, run, kernels, errors ------===//

#include "TestUtil.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace fusec;
using Catch::Matchers::Contains;

namespace {

Tensor iota(DType dtype, Shape shape, double scale = 0.1) {
  Tensor tensor(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.set(i, (i - 3) * scale);
  return tensor;
}

/// sin(sin(sin(sin(x)))) * y + sin(sin(sin(sin(x)))), with sin⁴ also an output.
Graph seedGraph() {
  GraphBuilder b("seed");
  std::string x = b.input("x", DType::F32, {2, 3});
  std::string y = b.input("y", DType::F32, {2, 3});
  std::string s = b.op("sin", {b.op("sin", {b.op("sin", {b.op("sin", {x})})})});
  b.output(b.op("add", {b.op("mul", {s, y}), s}));
  b.output(s);
  return b.build();
}

} // namespace

TEST_CASE("sin4 * y + sin4 becomes one kernel with two outputs", "[api]") {
  test::compileForGpus(seedGraph());
  CompiledModel model = compile(seedGraph(), test::testOptions());
  std::vector<KernelInfo> kernels = model.kernels();
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].name == "fused_sin_sin_sin_sin_mul_add_0");
  CHECK(kernels[0].ops ==
        std::vector<std::string>{"sin", "sin", "sin", "sin", "mul", "add"});
  CHECK_THAT(kernels[0].source,
             Contains("extern \"C\" void " + kernels[0].name));
  CHECK(model.program().kernels[0].outputs.size() == 2);

  Tensor x = iota(DType::F32, {2, 3}), y = iota(DType::F32, {2, 3}, -0.3);
  std::vector<Tensor> outputs = model.run({x, y});
  REQUIRE(outputs.size() == 2);
  Tensor expectedZ(DType::F32, {2, 3}), expectedS(DType::F32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) {
    double s = std::sin(std::sin(std::sin(std::sin(x.at(i)))));
    expectedS.set(i, s);
    expectedZ.set(i, s * y.at(i) + s);
  }
  CHECK(compareTensors(outputs[0], expectedZ).ok());
  CHECK(compareTensors(outputs[1], expectedS).ok());
}

TEST_CASE("unfused compilation gives one kernel per op with the same results",
          "[api]") {
  CompiledModel fused = compile(seedGraph(), test::testOptions(true));
  CompiledModel unfused = compile(seedGraph(), test::testOptions(false));
  CHECK(unfused.kernels().size() == 6);
  for (const KernelInfo &kernel : unfused.kernels())
    CHECK(kernel.ops.size() == 1);
  Tensor x = iota(DType::F32, {2, 3}), y = iota(DType::F32, {2, 3}, 0.7);
  std::vector<Tensor> a = fused.run({x, y}), b = unfused.run({x, y});
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(compareTensors(a[i], b[i]).ok());
}

TEST_CASE("kernels of the same code share one compiled function", "[api]") {
  // Unfused, sin(sin(x)) is two kernels of the same code but their names.
  GraphBuilder b("twice");
  std::string x = b.input("x", DType::F32, {3, 5});
  b.output(b.op("sin", {b.op("sin", {x})}));
  CompiledModel model = compile(b.build(), test::testOptions(false));
  const Program &program = model.program();
  REQUIRE(program.kernels.size() == 2);
  CompileUnits units = splitIntoCompileUnits(program, 4);
  CHECK(units.sources.size() == 1);
  CHECK(units.functionOf[1] == program.kernels[0].name);
  CHECK(units.sources[0].find(program.kernels[1].name) == std::string::npos);
  Tensor input = iota(DType::F32, {3, 5});
  Tensor output = model.run({input})[0];
  for (int64_t i = 0; i < input.numElements(); ++i)
    CHECK(output.at(i) ==
          Approx(std::sin(std::sin(input.at(i)))).epsilon(1e-6).margin(1e-7));
}

TEST_CASE("chains of vector math calls run one call at a time over tiles",
          "[api]") {
  // z = tanh(exp(cos(sin(x))) * y) + sin(x), with exp(...) an output too:
  // four libmvec calls in a chain. 90300 elements take the parallel loop
  // and end in a partial tile; 100 elements take the serial one.
  for (DType dtype : {DType::F32, DType::F64, DType::F16})
    for (Shape shape : {Shape{300, 301}, Shape{100}}) {
      INFO(dtypeName(dtype) << " " << formatShape(shape));
      GraphBuilder b("staged");
      std::string x = b.input("x", dtype, shape);
      std::string y = b.input("y", dtype, shape);
      std::string s = b.op("sin", {x});
      std::string e = b.op("exp", {b.op("cos", {s})});
      b.output(b.op("add", {b.op("tanh", {b.op("mul", {e, y})}), s}));
      b.output(e);
      CompiledModel model = compile(b.build(), test::testOptions());
      REQUIRE(model.kernels().size() == 1);
      CHECK_THAT(model.kernels()[0].source, Contains("tile += 64"));
      Tensor xs = iota(dtype, shape, 0.37), ys = iota(dtype, shape, -0.011);
      std::vector<Tensor> outputs = model.run({xs, ys});
      REQUIRE(outputs.size() == 2);
      Tensor expectedZ(dtype, shape), expectedE(dtype, shape);
      for (int64_t i = 0; i < xs.numElements(); ++i) {
        double sine = std::sin(xs.at(i));
        double exponential = std::exp(std::cos(sine));
        expectedE.set(i, exponential);
        expectedZ.set(i, std::tanh(exponential * ys.at(i)) + sine);
      }
      CHECK(compareTensors(outputs[0], expectedZ).ok());
      CHECK(compareTensors(outputs[1], expectedE).ok());
    }
}

TEST_CASE("large outputs are written with streaming stores", "[api]") {
  // x * y + x with 32 MiB of output and a partial last tile, in f32 and
  // bf16 (16-bit elements through the tile); NaN and signed zeros pass
  // through as they are.
  for (DType dtype : {DType::F32, DType::BF16}) {
    const int64_t count = (int64_t(32) << 20) / dtypeBytes(dtype) + 37;
    INFO(dtypeName(dtype) << " " << count);
    GraphBuilder b("streamed");
    std::string x = b.input("x", dtype, {count});
    std::string y = b.input("y", dtype, {count});
    b.output(b.op("add", {b.op("mul", {x, y}), x}));
    CompiledModel model = compile(b.build(), test::testOptions());
    REQUIRE(model.kernels().size() == 1);
    CHECK_THAT(model.kernels()[0].source, Contains("fusec_stream_store(out0"));
    Tensor xs(dtype, {count}), ys(dtype, {count});
    for (int64_t i = 0; i < count; ++i) {
      xs.set(i, i % 5 == 0 ? -0.0 : (i % 1001 - 500) * 0.25);
      ys.set(i, i % 7 == 0 ? std::nan("") : (i % 13 - 6) * 0.5);
    }
    std::vector<Tensor> outputs = model.run({xs, ys});
    REQUIRE(outputs.size() == 1);
    // Whole cache lines: tensors are allocated on 64-byte boundaries.
    CHECK(reinterpret_cast<uintptr_t>(outputs[0].data()) % 64 == 0);
    Tensor expected(dtype, {count});
    for (int64_t i = 0; i < count; ++i)
      expected.set(i, xs.at(i) * ys.at(i) + xs.at(i));
    CHECK(compareTensors(outputs[0], expected).ok());
  }
}

TEST_CASE("a CPU model refuses device tensors", "[api]") {
  CompiledModel model = compile(seedGraph(), test::testOptions());
  CHECK_THROWS_WITH(model.runOnDevice({}, {}),
                    Catch::Contains("only CUDA models run on device tensors"));
}

TEST_CASE("muladd x*y + x is one kernel", "[api]") {
  GraphBuilder b("muladd");
  std::string x = b.input("x", DType::F32, {1000});
  std::string y = b.input("y", DType::F32, {1000});
  b.output(b.op("add", {b.op("mul", {x, y}), x}));
  CompiledModel model = compile(b.build(), test::testOptions());
  REQUIRE(model.kernels().size() == 1);
  CHECK(model.kernels()[0].ops == std::vector<std::string>{"mul", "add"});
}

TEST_CASE("a view keeps a pointwise chain in one kernel", "[api]") {
  // exp(reshape(sin(x) * y)): the reshape keeps element order, so the
  // kernel iterates linear indices straight through it.
  GraphBuilder b("reshaped");
  std::string x = b.input("x", DType::F32, {2, 3});
  std::string y = b.input("y", DType::F32, {3});
  std::string r = b.op("reshape", {b.op("mul", {b.op("sin", {x}), y})},
                       {{"shape", Shape{3, 2}}});
  b.output(b.op("exp", {r}));
  CompiledModel model = compile(b.build(), test::testOptions());
  REQUIRE(model.kernels().size() == 1);
  Tensor input = iota(DType::F32, {2, 3});
  Tensor scale = iota(DType::F32, {3}, 0.25);
  Tensor output = model.run({input, scale})[0];
  REQUIRE(output.shape == Shape{3, 2});
  Tensor expected(DType::F32, {3, 2});
  for (int64_t i = 0; i < 6; ++i)
    expected.set(i, std::exp(std::sin(input.at(i)) * scale.at(i % 3)));
  CHECK(compareTensors(output, expected).ok());
}

TEST_CASE("a reshape of a graph input aliases its buffer", "[api]") {
  GraphBuilder b("alias");
  std::string x = b.input("x", DType::F32, {2, 3});
  std::string r = b.op("reshape", {x}, {{"shape", Shape{6}}});
  b.output(b.op("cos", {r}));
  CompiledModel model = compile(b.build(), test::testOptions());
  REQUIRE(model.kernels().size() == 1);
  Tensor input = iota(DType::F32, {2, 3});
  Tensor output = model.run({input})[0];
  REQUIRE(output.shape == Shape{6});
  Tensor expected(DType::F32, {6});
  for (int64_t i = 0; i < 6; ++i)
    expected.set(i, std::cos(input.at(i)));
  CHECK(compareTensors(output, expected).ok());
}

TEST_CASE("a dense constant bias is broadcast into the kernel", "[api]") {
  GraphBuilder b("bias");
  std::string x = b.input("x", DType::F32, {4, 3});
  Tensor biasValue = iota(DType::F32, {3}, 0.5);
  std::string bias = b.constant("bias", biasValue);
  std::string half = b.scalar(0.5, DType::F32);
  b.output(b.op("mul", {b.op("add", {x, bias}), half}));
  CompiledModel model = compile(b.build(), test::testOptions());
  REQUIRE(model.kernels().size() == 1);
  Tensor input = iota(DType::F32, {4, 3});
  Tensor output = model.run({input})[0];
  Tensor expected(DType::F32, {4, 3});
  for (int64_t i = 0; i < 12; ++i)
    expected.set(i, (input.at(i) + biasValue.at(i % 3)) * 0.5);
  CHECK(compareTensors(output, expected).ok());
}

TEST_CASE("an input returned as an output is copied out", "[api]") {
  GraphBuilder b("identity");
  std::string x = b.input("x", DType::I32, {5});
  b.output(x);
  b.output(b.op("neg", {x}));
  CompiledModel model = compile(b.build(), test::testOptions());
  Tensor input = iota(DType::I32, {5}, 1);
  std::vector<Tensor> outputs = model.run({input});
  CHECK(outputs[0].bytes == input.bytes);
  for (int64_t i = 0; i < 5; ++i)
    CHECK(outputs[1].at(i) == -input.at(i));
}

TEST_CASE("lowering exposes every stage", "[api]") {
  Lowering lowering = lowerGraph(seedGraph(), test::testOptions(), true);
  CHECK_THAT(lowering.importedIR, Contains("fuse.sin"));
  CHECK_THAT(lowering.fusedIR, Contains("fuse.fusion"));
  CHECK_THAT(lowering.program.planJson(), Contains("\"kernels\""));
  CHECK_THAT(lowering.program.source, Contains("#pragma omp simd"));
}

TEST_CASE("lowering stops after the stage asked for", "[api]") {
  Lowering imported =
      lowerGraph(seedGraph(), test::testOptions(), true, Stage::Imported);
  CHECK_THAT(imported.importedIR, Contains("fuse.sin"));
  CHECK(imported.fusedIR.empty());
  CHECK(imported.program.kernels.empty());
  CHECK(imported.passMillis.empty());

  Lowering fused =
      lowerGraph(seedGraph(), test::testOptions(), true, Stage::Fused);
  CHECK_THAT(fused.fusedIR, Contains("fuse.fusion"));
  CHECK(fused.program.kernels.empty());
  bool formedRegions = false;
  for (const auto &[pass, ms] : fused.passMillis)
    formedRegions |= pass == "fuse-form-fusion-regions" && ms >= 0;
  CHECK(formedRegions);
}

TEST_CASE("remarks reach the caller's callback, not stderr", "[api]") {
  GraphBuilder b("broadcast_producer");
  std::string x = b.input("x", DType::F32, {4, 8});
  std::string e = b.op("exp", {b.input("b", DType::F32, {8})});
  b.output(b.op("add", {x, e}));
  std::vector<std::string> remarks;
  CompileOptions options = test::testOptions();
  options.onRemark = [&](const std::string &remark) {
    remarks.push_back(remark);
  };
  lowerGraph(b.build(), options);
  REQUIRE(remarks.size() == 1);
  CHECK_THAT(remarks[0], Contains("remark: not fused with its consumer"));
  CHECK_THAT(remarks[0], Contains("duplicate work"));
}

TEST_CASE("running with wrong inputs names the input", "[api][errors]") {
  CompiledModel model = compile(seedGraph(), test::testOptions());
  Tensor good = iota(DType::F32, {2, 3});
  CHECK_THROWS_WITH(model.run({good, iota(DType::F32, {3, 2})}),
                    Contains("input 'y' expects f32[2x3] but got f32[3x2]"));
  CHECK_THROWS_WITH(model.run({good}), Contains("takes 2 inputs but got 1"));
  CHECK_THROWS_WITH(model.run({good, iota(DType::F64, {2, 3})}),
                    Contains("input 'y' expects f32[2x3] but got f64[2x3]"));
}

TEST_CASE("bad graphs give errors naming the node", "[api][errors]") {
  SECTION("unknown op") {
    GraphBuilder b("bad");
    b.output(b.op("frobnicate", {b.input("x", DType::F32, {2})}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("<graph bad>: node 'frobnicate_0': error: "
                               "unknown op 'frobnicate'"));
  }
  SECTION("shapes that do not broadcast") {
    GraphBuilder b("bad");
    b.output(b.op("add", {b.input("x", DType::F32, {2, 3}),
                          b.input("y", DType::F32, {4})}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'add_0': error: operand shapes 2x3 and 4 "
                               "are not broadcast-compatible"));
  }
  SECTION("op refusing a dtype") {
    GraphBuilder b("bad");
    b.output(b.op("sin", {b.input("x", DType::I32, {2})}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'sin_0': error: 'fuse.sin' does not "
                               "accept dtype i32"));
  }
}

TEST_CASE("a zero tolerance tells -0.0 from +0.0; any other does not",
          "[api]") {
  Tensor negative(DType::F32, {2}), positive(DType::F32, {2});
  negative.set(0, -0.0);
  negative.set(1, 1.5);
  positive.set(0, 0.0);
  positive.set(1, 1.5);
  Comparison exact = compareTensors(negative, positive, {0, 0});
  CHECK(exact.mismatches == 1);
  CHECK(exact.firstMismatch == 0);
  CHECK(compareTensors(negative, negative, {0, 0}).ok());
  CHECK(compareTensors(negative, positive, {1e-7, 0}).ok());
}
