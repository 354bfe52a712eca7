//===- GpuTest.cpp - The CUDA backend on a real GPU ----------------------===//
//
// Tagged [gpu]: ctest labels them `gpu` and reports them skipped (exit 77)
// on machines without a usable GPU.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <string>
#include <thread>

using namespace fusec;

#define GPU_OPS_TEST(dtype)                                                    \
  TEST_CASE("every op on " #dtype " matches the reference on the GPU",         \
            "[gpu]") {                                                         \
    FUSEC_SKIP_IF(cuda::unavailableReason());                                  \
    test::checkAllOps(DType::dtype, Target::Cuda);                             \
  }
GPU_OPS_TEST(F64)
GPU_OPS_TEST(F32)
GPU_OPS_TEST(F16)
GPU_OPS_TEST(BF16)
GPU_OPS_TEST(I8)
GPU_OPS_TEST(I32)
GPU_OPS_TEST(I64)
GPU_OPS_TEST(I1)
GPU_OPS_TEST(I16)
GPU_OPS_TEST(U8)
GPU_OPS_TEST(U16)
GPU_OPS_TEST(U32)
GPU_OPS_TEST(U64)

TEST_CASE("random graphs on the GPU match unfused CPU execution", "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  test::checkRandomGraphs(DType::F32, 1, 24, Target::Cuda);
  test::checkRandomGraphs(DType::BF16, 301, 8, Target::Cuda);
  test::checkRandomGraphs(DType::I32, 201, 8, Target::Cuda);
}

TEST_CASE("sizes around the vector width on the GPU", "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  for (int64_t size : {1, 3, 4, 5, 7, 8, 9, 15, 17, 129, 256, 257, 263, 1023,
                       1027, 4097, 1000003}) {
    for (DType dtype : {DType::F32, DType::BF16, DType::I8}) {
      INFO("size " << size << " " << dtypeName(dtype));
      GraphBuilder b("tail");
      std::string x = b.input("x", dtype, {size});
      std::string y = b.input("y", dtype, {size});
      b.output(b.op("max", {b.op("neg", {x}), y}));
      std::mt19937_64 rng(size);
      std::vector<Tensor> inputs = {randomTensor(dtype, {size}, rng, -9, 9),
                                    randomTensor(dtype, {size}, rng, -9, 9)};
      Tensor gpu = compile(b.build(), test::testOptions(true, Target::Cuda))
                       .run(inputs)[0];
      Tensor cpu = compile(b.build(), test::testOptions(false, Target::Cpu))
                       .run(inputs)[0];
      Comparison comparison = compareTensors(gpu, cpu);
      INFO(test::describeMismatch(gpu, cpu, comparison));
      CHECK(comparison.ok());
    }
  }
}

TEST_CASE("a CUDA pointwise launch covers the warp after the vectors",
          "[codegen]") {
  // f32 moves as 4-vectors past 256 elements; a tail's threads start at the
  // warp after the vectors' (no GPU needed: the program is only lowered).
  struct Case {
    int64_t size, blocks;
    const char *perThread;
  };
  for (Case c : {Case{6, 1, "1 per thread"}, Case{256, 1, "1 per thread"},
                 Case{257, 1, "4 per thread"}, Case{8190, 9, "4 per thread"},
                 Case{8192, 8, "4 per thread"}}) {
    INFO("size " << c.size);
    GraphBuilder b("neg");
    b.output(b.op("neg", {b.input("x", DType::F32, {c.size})}));
    Program program =
        lowerGraph(b.build(), test::testOptions(true, Target::Cuda)).program;
    REQUIRE(program.kernels.size() == 1);
    CHECK(program.kernels[0].launch.gridX == c.blocks);
    CHECK(program.kernels[0].source.find(c.perThread) != std::string::npos);
  }
}

TEST_CASE("more than 2^31 elements index in 64 bits on the GPU", "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  const int64_t size = (int64_t(1) << 31) + 5;
  GraphBuilder b("huge");
  std::string x = b.input("x", DType::I8, {size});
  b.output(b.op("neg", {x}));
  CompiledModel model =
      compile(b.build(), test::testOptions(true, Target::Cuda));
  CHECK(model.kernels()[0].source.find("const int64_t count = 2147483653;") !=
        std::string::npos);
  Tensor input(DType::I8, {size});
  for (int64_t i = 0; i < size; ++i)
    input.as<int8_t>()[i] = static_cast<int8_t>(i * 7);
  Tensor output = model.run({input})[0];
  int64_t mismatches = 0, firstMismatch = -1;
  for (int64_t i = 0; i < size; ++i)
    if (output.as<int8_t>()[i] != static_cast<int8_t>(-input.as<int8_t>()[i]))
      if (mismatches++ == 0)
        firstMismatch = i;
  INFO("first mismatch at " << firstMismatch);
  CHECK(mismatches == 0);
}

TEST_CASE("CUDA errors name the kernel or buffer", "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  GraphBuilder b("too_big");
  // 2^40 f32 elements: far beyond any GPU's memory.
  b.output(b.op("neg", {b.input("x", DType::F32, {int64_t(1) << 40})}));
  CHECK_THROWS_WITH(compile(b.build(), test::testOptions(true, Target::Cuda)),
                    Catch::Matchers::Contains("cuMemAlloc for buffer 'x'") &&
                        Catch::Matchers::Contains("OUT_OF_MEMORY"));
}

TEST_CASE("a replayed CUDA graph gives each run's own results", "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  // A kernel, a library call and output views: every kind of step. Small
  // inputs and outputs are zero-copy (mapped host memory) unless turned
  // off; library operands never are.
  GraphBuilder b("graph_replay");
  std::string x = b.input("x", DType::F32, {8, 16});
  std::string w = b.input("w", DType::F32, {16, 4});
  std::string y = b.op("matmul", {b.op("sin", {x}), w});
  b.output(b.op("reshape", {b.op("relu", {y})},
                {{"shape", std::vector<int64_t>{32}}}));
  b.output(b.op("cos", {x})); // kernel
  b.output(
      b.op("reshape", {x}, {{"shape", std::vector<int64_t>{128}}})); // view
  Tensor constant(DType::F32, {3});
  for (int64_t i = 0; i < 3; ++i)
    constant.set(i, 0.5 + i);
  b.output(b.constant("c", constant)); // an output no kernel writes
  Graph graph = b.build();
  std::vector<CompiledModel> models;
  for (bool cudaGraph : {true, false})
    for (int64_t zeroCopy : {int64_t(16384), int64_t(0)}) {
      CompileOptions options = test::testOptions(true, Target::Cuda);
      options.cudaGraph = cudaGraph;
      options.zeroCopyMaxBytes = zeroCopy;
      models.push_back(compile(graph, options));
    }
  CompiledModel reference = compile(graph, test::testOptions(false));
  std::mt19937_64 rng(7);
  // New inputs on every run: a graph that kept its first run's data, or
  // read the caller's tensors rather than its staging, fails the second.
  for (int run = 0; run < 3; ++run) {
    INFO("run " << run);
    std::vector<Tensor> inputs = {randomTensor(DType::F32, {8, 16}, rng),
                                  randomTensor(DType::F32, {16, 4}, rng)};
    std::vector<Tensor> expected = reference.run(inputs);
    for (size_t m = 0; m < models.size(); ++m) {
      INFO("variant " << m << " (graph, zero-copy; graph; zero-copy; none)");
      std::vector<Tensor> got = models[m].run(inputs);
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("output " << i);
        Comparison comparison = compareTensors(got[i], expected[i]);
        INFO(test::describeMismatch(got[i], expected[i], comparison));
        CHECK(comparison.ok());
      }
    }
  }
}

TEST_CASE("a model compiled on one thread runs on others", "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  // A server compiles once and runs on its worker threads, none of which
  // has made fusec's CUDA context current: every run must work there, with
  // and without the CUDA graph, zero-copy or not, a kernel and a library
  // call.
  GraphBuilder b("other_threads");
  std::string x = b.input("x", DType::F32, {8, 16});
  std::string w = b.input("w", DType::F32, {16, 4});
  b.output(b.op("relu", {b.op("matmul", {b.op("sin", {x}), w})}));
  Graph graph = b.build();
  CompiledModel reference = compile(graph, test::testOptions(false));
  std::mt19937_64 rng(11);
  std::vector<Tensor> inputs = {randomTensor(DType::F32, {8, 16}, rng),
                                randomTensor(DType::F32, {16, 4}, rng)};
  std::vector<Tensor> expected = reference.run(inputs);
  for (bool cudaGraph : {true, false})
    for (int64_t zeroCopy : {int64_t(16384), int64_t(0)}) {
      INFO("graph " << cudaGraph << ", zero-copy " << zeroCopy);
      CompileOptions options = test::testOptions(true, Target::Cuda);
      options.cudaGraph = cudaGraph;
      options.zeroCopyMaxBytes = zeroCopy;
      CompiledModel model = compile(graph, options);
      for (int run = 0; run < 2; ++run) {
        std::vector<Tensor> got;
        std::string error;
        std::thread worker([&] {
          try {
            got = model.run(inputs);
          } catch (const std::exception &e) {
            error = e.what();
          }
        });
        worker.join();
        INFO("run " << run << " on a new thread: " << error);
        REQUIRE(error.empty());
        REQUIRE(got.size() == 1);
        Comparison comparison = compareTensors(got[0], expected[0]);
        INFO(test::describeMismatch(got[0], expected[0], comparison));
        CHECK(comparison.ok());
      }
    }
}

TEST_CASE("two models run at the same time on two threads", "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  // Both share fusec's stream: each thread's runs, the first of which
  // captures its CUDA graph, must neither join the other's capture nor
  // take its results.
  std::vector<Graph> graphs;
  for (const char *op : {"sin", "cos"}) {
    GraphBuilder b(std::string("concurrent_") + op);
    std::string x = b.input("x", DType::F32, {8, 16});
    std::string w = b.input("w", DType::F32, {16, 4});
    b.output(b.op("relu", {b.op("matmul", {b.op(op, {x}), w})}));
    graphs.push_back(b.build());
  }
  for (bool cudaGraph : {true, false}) {
    INFO("graph " << cudaGraph);
    std::vector<CompiledModel> models, references;
    for (const Graph &graph : graphs) {
      CompileOptions options = test::testOptions(true, Target::Cuda);
      options.cudaGraph = cudaGraph;
      models.push_back(compile(graph, options));
      references.push_back(compile(graph, test::testOptions(false)));
    }
    std::vector<std::string> failures(models.size());
    std::vector<std::thread> threads;
    for (size_t m = 0; m < models.size(); ++m)
      threads.emplace_back([&, m] {
        std::mt19937_64 rng(100 + m);
        try {
          for (int run = 0; run < 50 && failures[m].empty(); ++run) {
            std::vector<Tensor> inputs = {
                randomTensor(DType::F32, {8, 16}, rng),
                randomTensor(DType::F32, {16, 4}, rng)};
            std::vector<Tensor> expected = references[m].run(inputs);
            std::vector<Tensor> got = models[m].run(inputs);
            if (!compareTensors(got[0], expected[0]).ok())
              failures[m] =
                  "run " + std::to_string(run) + ": " +
                  test::describeMismatch(got[0], expected[0],
                                         compareTensors(got[0], expected[0]));
          }
        } catch (const std::exception &e) {
          failures[m] = e.what();
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    for (size_t m = 0; m < models.size(); ++m) {
      INFO("model " << m << ": " << failures[m]);
      CHECK(failures[m].empty());
    }
  }
}

namespace {

/// Runs `graph` from host tensors and on device copies of them: the
/// outputs must be the same bits (the same kernels on the same inputs).
void checkDeviceRun(const Graph &graph, uint64_t seed, bool cudaGraph = true) {
  CompileOptions options = test::testOptions(true, Target::Cuda);
  options.cudaGraph = cudaGraph;
  CompiledModel model = compile(graph, options);
  const Program &program = model.program();
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs;
  for (int id : program.inputs)
    inputs.push_back(randomTensor(program.buffers[id].dtype,
                                  program.buffers[id].shape, rng, -2, 2));
  std::vector<Tensor> expected = model.run(inputs);

  std::vector<std::unique_ptr<test::DeviceCopy>> deviceInputs, deviceOutputs;
  std::vector<DeviceTensor> in, out;
  for (const Tensor &input : inputs) {
    deviceInputs.push_back(std::make_unique<test::DeviceCopy>(input));
    in.push_back(deviceInputs.back()->tensor());
  }
  for (const Tensor &output : expected) {
    // Filled with NaN-like bytes: an output nobody writes shows.
    Tensor garbage(output.dtype, output.shape);
    std::fill(garbage.bytes.begin(), garbage.bytes.end(), 0xff);
    deviceOutputs.push_back(std::make_unique<test::DeviceCopy>(garbage));
    out.push_back(deviceOutputs.back()->tensor());
  }
  // Twice, with a host run between: the executable's own addresses are
  // restored after a device run, and a device run after a host one.
  for (int round = 0; round < 2; ++round) {
    model.runOnDevice(in, out);
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("round " << round << ", output " << program.outputNames[i]);
      CHECK(deviceOutputs[i]->download().bytes == expected[i].bytes);
    }
    CHECK(model.run(inputs)[0].bytes == expected[0].bytes);
  }
  // Queued back to back into more output sets than the executable keeps
  // graphs for (each binding captured once, the oldest evicted), then the
  // first set again: every set holds the results after one synchronize.
  std::vector<std::vector<std::unique_ptr<test::DeviceCopy>>> sets(10);
  for (auto &set : sets)
    for (const Tensor &output : expected) {
      Tensor garbage(output.dtype, output.shape);
      std::fill(garbage.bytes.begin(), garbage.bytes.end(), 0xff);
      set.push_back(std::make_unique<test::DeviceCopy>(garbage));
    }
  auto tensorsOf =
      [](const std::vector<std::unique_ptr<test::DeviceCopy>> &set) {
        std::vector<DeviceTensor> tensors;
        for (const auto &copy : set)
          tensors.push_back(copy->tensor());
        return tensors;
      };
  for (int round = 0; round < 2; ++round)
    for (const auto &set : sets)
      model.enqueueOnDevice(in, tensorsOf(set));
  model.synchronize();
  for (size_t s = 0; s < sets.size(); ++s)
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("queued run into output set " << s << ", output "
                                         << program.outputNames[i]);
      CHECK(sets[s][i]->download().bytes == expected[i].bytes);
    }
}

} // namespace

TEST_CASE("a model runs on device tensors and writes the memory of the caller",
          "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  SECTION("sin4 * y + sin4, small enough for zero-copy host I/O") {
    GraphBuilder b("seed");
    std::string x = b.input("x", DType::F32, {2, 3});
    std::string y = b.input("y", DType::F32, {2, 3});
    std::string s =
        b.op("sin", {b.op("sin", {b.op("sin", {b.op("sin", {x})})})});
    b.output(b.op("add", {b.op("mul", {s, y}), s}));
    b.output(s);
    checkDeviceRun(b.build(), 1);
    checkDeviceRun(b.build(), 1, /*cudaGraph=*/false);
  }
  SECTION("a matmul with a bias input, a norm, and outputs that are views") {
    // relu(x @ w + bias) is one cuBLASLt call with the bias an input; the
    // reshape of x is a view of an input and `x` itself an output (both
    // copied); the norm's result is written in place and also returned
    // reshaped (a view of a written buffer: copied the second time).
    GraphBuilder b("mixed");
    std::string x = b.input("x", DType::BF16, {64, 256});
    std::string w = b.input("w", DType::BF16, {256, 128});
    std::string bias = b.input("bias", DType::BF16, {128});
    std::string h = b.op("relu", {b.op("add", {b.op("matmul", {x, w}), bias})});
    std::string norm = b.op("rms_norm", {h, b.input("g", DType::BF16, {128})},
                            {{"epsilon", 1e-6}});
    b.output(norm);
    b.output(b.op("reshape", {norm}, {{"shape", Shape{128, 64}}}));
    b.output(b.op("reshape", {x}, {{"shape", Shape{256, 64}}}));
    b.output(x);
    checkDeviceRun(b.build(), 2);
  }
}

TEST_CASE("device tensors of the wrong type are refused by name", "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  GraphBuilder b("neg");
  b.output(b.op("neg", {b.input("x", DType::F32, {4})}));
  CompiledModel model =
      compile(b.build(), test::testOptions(true, Target::Cuda));
  Tensor x(DType::F32, {4}), y(DType::F32, {4});
  test::DeviceCopy input(x), output(y);
  DeviceTensor wrong = input.tensor();
  wrong.shape = {5};
  CHECK_THROWS_WITH(model.runOnDevice({wrong}, {output.tensor()}),
                    Catch::Contains("input 'x' is f32[4] but the device "
                                    "tensor is f32[5]"));
  CHECK_THROWS_WITH(model.runOnDevice({input.tensor()}, {}),
                    Catch::Contains("has 1 outputs but got 0"));
}
