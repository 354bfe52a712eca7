//===- PackageTest.cpp - Compiled models saved and loaded ----------------===//
//
// A package (runtime/Package.h) holds a compiled model: loaded again, it
// must compute exactly what the compiled model computes (the same kernel
// code on the same inputs), and every damaged or foreign file must be an
// error naming the file and the reason.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "frontends/Onnx.h"
#include "runtime/Package.h"
#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>

using namespace fusec;
using Catch::Matchers::Contains;

namespace {

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<Tensor> randomInputs(const Program &program, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs;
  for (int id : program.inputs)
    inputs.push_back(randomTensor(program.buffers[id].dtype,
                                  program.buffers[id].shape, rng));
  return inputs;
}

/// Saves `model`, loads it back and checks that both give bit-identical
/// outputs on `inputs`.
void checkRoundTrip(CompiledModel &model, const std::vector<Tensor> &inputs,
                    const std::string &path) {
  model.save(path);
  CompiledModel loaded = load(path);
  CHECK(loaded.program().name == model.program().name);
  CHECK(loaded.program().planJson() == model.program().planJson());
  std::vector<Tensor> expected = model.run(inputs);
  std::vector<Tensor> actual = loaded.run(inputs);
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("output " << i << " of " << path);
    CHECK(actual[i].dtype == expected[i].dtype);
    CHECK(actual[i].shape == expected[i].shape);
    CHECK(actual[i].bytes == expected[i].bytes);
  }
}

/// A small CPU package of a model with a constant (its last section).
std::string savedCpuPackage(const std::string &dir) {
  CompiledModel model = compileFile(
      FUSEC_TEST_MODELS_DIR "/linear_bias_gelu.json", test::testOptions());
  std::string path = dir + "/linear_bias_gelu.fusec";
  model.save(path);
  return path;
}

/// The message load(path) throws, or "" when it loads.
std::string loadError(const std::string &path) {
  try {
    load(path);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

/// A model with a symbolic sequence length after a fixed dim: a layer norm,
/// a matmul (symbolic m), a transpose moving seq, and an embedding gather.
Graph symbolicSequenceGraph() {
  std::mt19937_64 rng(21);
  GraphBuilder b("symbolic_sequence");
  b.symbol("seq", 1, 20);
  std::string x = b.input("x", DType::F32, {2, -1, 64}, {"", "seq", ""});
  std::string ids = b.input("ids", DType::I64, {2, -1}, {"", "seq"});
  std::string w = b.constant("w", randomTensor(DType::F32, {64, 32}, rng));
  std::string table =
      b.constant("table", randomTensor(DType::F32, {5, 32}, rng));
  std::string y = b.op("matmul", {b.op("layer_norm", {x}), w});
  std::string sum = b.op("add", {y, b.op("gather", {table, ids})});
  b.output(b.op("transpose", {sum}, {{"perm", std::vector<int64_t>{1, 0, 2}}}));
  return b.build();
}

/// Saves the symbolic `model`, loads the package and checks that it gives
/// the compiled model's outputs, bit for bit, at several sequence lengths.
void checkSymbolicRoundTrip(CompiledModel &model, const std::string &path) {
  model.save(path);
  CompiledModel loaded = load(path);
  CHECK(loaded.program().isSymbolic());
  CHECK(loaded.program().planJson() == model.program().planJson());
  std::mt19937_64 rng(5);
  for (int64_t seq : {1, 7, 20, 3}) {
    INFO("seq " << seq);
    std::vector<Tensor> inputs = {
        randomTensor(DType::F32, {2, seq, 64}, rng),
        randomTensor(DType::I64, {2, seq}, rng, -5, 4)};
    std::vector<Tensor> expected = model.run(inputs);
    std::vector<Tensor> actual = loaded.run(inputs);
    REQUIRE(actual.size() == expected.size());
    CHECK(actual[0].shape == Shape{seq, 2, 32});
    CHECK(actual[0].shape == expected[0].shape);
    CHECK(actual[0].bytes == expected[0].bytes);
  }
  std::vector<Tensor> tooLong = {randomTensor(DType::F32, {2, 21, 64}, rng),
                                 randomTensor(DType::I64, {2, 21}, rng, 0, 4)};
  CHECK_THROWS_WITH(loaded.run(tooLong),
                    Contains("dim 1 ('seq') is 21, outside its range 1..20"));
}

template <typename T> void patch(std::string &bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

} // namespace

TEST_CASE("packaged models compute what the compiled ones do", "[package]") {
  std::string dir = test::freshTempDir("package");
  for (const char *name :
       {"pointwise_ops", "layernorm_gelu", "softmax", "gemm_relu",
        "matmul_batched", "column_sum", "linear_bias_gelu"}) {
    INFO(name);
    CompiledModel model =
        compileFile(std::string(FUSEC_TEST_MODELS_DIR "/") + name + ".json",
                    test::testOptions());
    checkRoundTrip(model, randomInputs(model.program(), 7),
                   dir + "/" + name + ".fusec");
  }
  // A real model through ONNX: gpt2's token ids from its test data.
  CompiledModel gpt2 =
      compileFile(FUSEC_TEST_MODELS_DIR "/onnx/gpt2.onnx", test::testOptions());
  checkRoundTrip(
      gpt2,
      {readTensorProtoFile(FUSEC_TEST_MODELS_DIR "/onnx/gpt2_input_0.pb")},
      dir + "/gpt2.fusec");
  // In bf16 (--precision): its head writes f32 from bf16 operands, a call
  // the package must keep as it is.
  CompileOptions bf16 = test::testOptions();
  bf16.precision = DType::BF16;
  CompiledModel gpt2Bf16 =
      compileFile(FUSEC_TEST_MODELS_DIR "/onnx/gpt2.onnx", bf16);
  bool wideHead = false;
  for (const MatmulCall &call : gpt2Bf16.program().matmuls)
    wideHead |= call.dtype == DType::BF16 && call.resultDType() == DType::F32;
  CHECK(wideHead);
  checkRoundTrip(
      gpt2Bf16,
      {readTensorProtoFile(FUSEC_TEST_MODELS_DIR "/onnx/gpt2_input_0.pb")},
      dir + "/gpt2-bf16.fusec");
  // A loaded package saves again as the same bytes.
  std::string again = dir + "/gpt2-again.fusec";
  load(dir + "/gpt2.fusec").save(again);
  CHECK(readBytes(again) == readBytes(dir + "/gpt2.fusec"));
}

TEST_CASE("a package of a symbolic model serves every size in its ranges",
          "[package][symbolic]") {
  std::string dir = test::freshTempDir("package-symbolic");
  CompiledModel model = compile(symbolicSequenceGraph(), test::testOptions());
  checkSymbolicRoundTrip(model, dir + "/symbolic.fusec");

  // A declared multiple is kept: the loaded model refuses other sizes.
  GraphBuilder b("by_fours");
  b.symbol("n", 4, 32, 4);
  b.output(b.op("sin", {b.input("x", DType::F32, {-1, 8}, {"n", ""})}));
  CompiledModel byFours = compile(b.build(), test::testOptions());
  byFours.save(dir + "/by-fours.fusec");
  CompiledModel loaded = load(dir + "/by-fours.fusec");
  REQUIRE(loaded.program().symbols.size() == 1);
  CHECK(loaded.program().symbols[0].multiple == 4);
  std::mt19937_64 rng(9);
  Tensor twelve = randomTensor(DType::F32, {12, 8}, rng);
  CHECK(loaded.run({twelve})[0].bytes == byFours.run({twelve})[0].bytes);
  CHECK_THROWS_WITH(loaded.run({randomTensor(DType::F32, {10, 8}, rng)}),
                    Contains("dim 0 ('n') is 10, not a multiple of 4"));
}

TEST_CASE("a damaged or foreign package is an error naming the file",
          "[package]") {
  std::string dir = test::freshTempDir("package-errors");
  std::string path = savedCpuPackage(dir);
  const std::string good = readBytes(path);
  REQUIRE(loadError(path).empty());
  std::string damaged = dir + "/damaged.fusec";
  auto errorFor = [&](const std::string &bytes) {
    writeBytes(damaged, bytes);
    return loadError(damaged);
  };

  // Weights are the last section: a flipped byte there fails its checksum.
  std::string bytes = good;
  bytes[bytes.size() - 100] ^= 1;
  CHECK_THAT(errorFor(bytes),
             Contains(damaged + ": error: corrupt: the constant section") &&
                 Contains("does not match its checksum"));
  // A flipped byte in the header or section table.
  bytes = good;
  bytes[70] ^= 1;
  CHECK_THAT(errorFor(bytes), Contains("corrupt: the checksum of its header"));

  CHECK_THAT(errorFor(good.substr(0, good.size() / 2)),
             Contains(damaged +
                      ": error: truncated: " + std::to_string(good.size() / 2) +
                      " of " + std::to_string(good.size()) + " bytes"));
  CHECK_THAT(errorFor(good.substr(0, 10)),
             Contains("less than a package header"));
  CHECK_THAT(errorFor(good + "xyz"),
             Contains("3 bytes after the package's end"));

  bytes = good;
  bytes.replace(0, 8, "FUSECXXX");
  CHECK_THAT(errorFor(bytes), Contains("not a fusec package"));
  bytes = good;
  patch<uint32_t>(bytes, 8, 99);
  CHECK_THAT(errorFor(bytes),
             Contains("package format version 99; this fusec reads version " +
                      std::to_string(kPackageFormatVersion)));
  bytes = good;
  patch<uint32_t>(bytes, 12, 99);
  CHECK_THAT(errorFor(bytes), Contains("written by fusec 99.") &&
                                  Contains(std::string("this is fusec ") +
                                           packageFusecVersion()));
  CHECK_THAT(loadError(dir + "/missing.fusec"),
             Contains("missing.fusec: error: cannot open the package"));

  // Kernels compiled for CPU features this CPU lacks.
  PackageContents contents = parsePackage(good, path);
  contents.image->cpuFlags += " fusec_no_such_feature";
  savePackage(contents.program, *contents.image, damaged);
  CHECK_THAT(loadError(damaged),
             Contains(damaged + ": error: the package's kernels are compiled "
                                "for a CPU with features this one lacks: "
                                "fusec_no_such_feature"));
}

TEST_CASE("every truncation and byte flip of a package is an error",
          "[package]") {
  std::string dir = test::freshTempDir("package-fuzz");
  const std::string good = readBytes(savedCpuPackage(dir));
  // Past the checksums (as the fuzz harness reads): the structure itself is
  // checked. Every prefix, and a flipped byte every 7 bytes of the header,
  // table, program and kernel table.
  size_t checked = 0;
  for (size_t size = 0; size < good.size(); size += size < 4096 ? 1 : 4093) {
    CHECK_THROWS_AS(parsePackage(good.substr(0, size), "p", false), Error);
    ++checked;
  }
  for (size_t at = 0; at < std::min<size_t>(good.size(), 8192); at += 7) {
    std::string bytes = good;
    bytes[at] ^= 0x5a;
    try {
      parsePackage(bytes, "p", false);
    } catch (const Error &) {
    }
    CHECK_THROWS_AS(parsePackage(bytes, "p"), Error);
    ++checked;
  }
  CHECK(checked > 1000);
}

TEST_CASE("a CUDA package is written without a GPU", "[package]") {
  FUSEC_SKIP_IF(cuda::nvrtcUnavailableReason());
  std::string dir = test::freshTempDir("package-cuda");
  std::string path = dir + "/layernorm_gelu_cuda.fusec";
  Lowering lowering = lowerFile(FUSEC_TEST_MODELS_DIR "/layernorm_gelu.json",
                                test::testOptions(true, Target::Cuda));
  CompileOptions options = test::testOptions(true, Target::Cuda);
  options.gpuArch = "sm_90a";
  compileToPackage(lowering.program, options, path);
  PackageContents contents = parsePackage(readBytes(path), path);
  CHECK(contents.program.target == Target::Cuda);
  CHECK(contents.image->arch == "sm_90a");
  CHECK(contents.image->ptxArch == "sm_90");
  REQUIRE_FALSE(contents.image->code.empty());
  for (const std::string &ptx : contents.image->ptx)
    CHECK_THAT(ptx, Contains(".target sm_90"));
  if (!cuda::unavailableReason().empty())
    CHECK_THAT(loadError(path),
               Contains(path + ": error: the package is compiled for CUDA "
                               "(sm_90a), which cannot run here"));
}

TEST_CASE("a CUDA package loads on the GPU and computes what the compiled "
          "model does",
          "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  std::string dir = test::freshTempDir("package-gpu");
  for (const char *name : {"layernorm_gelu", "gemm_relu", "softmax_bf16"}) {
    INFO(name);
    CompiledModel model =
        compileFile(std::string(FUSEC_TEST_MODELS_DIR "/") + name + ".json",
                    test::testOptions(true, Target::Cuda));
    checkRoundTrip(model, randomInputs(model.program(), 11),
                   dir + "/" + name + ".fusec");
  }
  CompiledModel symbolic =
      compile(symbolicSequenceGraph(), test::testOptions(true, Target::Cuda));
  checkSymbolicRoundTrip(symbolic, dir + "/symbolic.fusec");
  CompiledModel model =
      compileFile(FUSEC_TEST_MODELS_DIR "/layernorm_gelu.json",
                  test::testOptions(true, Target::Cuda));
  std::vector<Tensor> inputs = randomInputs(model.program(), 5);
  std::vector<Tensor> expected = model.run(inputs);
  std::string path = dir + "/layernorm_gelu.fusec";
  model.save(path);
  PackageContents contents = parsePackage(readBytes(path), path);
  // Cubins for another GPU: the driver compiles the PTX instead.
  contents.image->arch = "sm_999";
  std::string other = dir + "/other-arch.fusec";
  savePackage(contents.program, *contents.image, other);
  std::vector<Tensor> fromPtx = load(other).run(inputs);
  CHECK(compareTensors(fromPtx[0], expected[0]).ok());
  // ... and without PTX it cannot run here.
  for (std::string &ptx : contents.image->ptx)
    ptx.clear();
  savePackage(contents.program, *contents.image, other);
  CHECK_THAT(loadError(other),
             Contains(other + ": error: its kernels are compiled for sm_999") &&
                 Contains("which cannot run on this GPU"));
}
