//===- CliTest.cpp - fusec's exit codes and messages on bad input --------===//
//
// Runs the real `fusec` binary: bad models exit 1 with
// `FILE: node 'NAME': error: REASON`, usage errors exit 2, good runs exit 0.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sys/wait.h>

using namespace fusec;
using Catch::Matchers::Contains;

namespace {

struct CliResult {
  int exitCode;
  std::string output; ///< stdout and stderr together
};

CliResult runFusec(const std::string &arguments) {
  std::string command = std::string("'") + FUSEC_TOOL_PATH + "' " + arguments +
                        " --cache-dir='" + FUSEC_TEST_CACHE_DIR + "' 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// Writes `text` to DIR/NAME and returns the path.
std::string writeModel(const std::string &dir, const std::string &name,
                       const std::string &text) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char *kGoodInput =
    R"("inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]}])";

/// DIR/NAME: a valid model of one `op` on kGoodInput's x.
std::string writeUnaryModel(const std::string &dir, const std::string &name,
                            const std::string &op) {
  return writeModel(dir, name,
                    std::string(R"({"fusec_graph": 1, )") + kGoodInput +
                        R"(, "nodes": [{"name": "n", "op": ")" + op +
                        R"(", "inputs": ["x"], "outputs": ["y"]}], )" +
                        R"("outputs": ["y"]})");
}

} // namespace

TEST_CASE("bad models exit 1 naming the file and node", "[cli]") {
  std::string dir = test::freshTempDir("cli");
  struct Case {
    const char *label, *file, *model, *expected;
  };
  const Case cases[] = {
      {"malformed JSON", "bad.json", "{\"fusec_graph\": 1,",
       "bad.json: error: malformed JSON"},
      {"unknown op", "op.json",
       R"({"fusec_graph": 1, INPUT, "nodes": [{"name": "n", "op": "warp",
          "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})",
       "op.json: node 'n': error: unknown op 'warp'"},
      {"wrong arity", "arity.json",
       R"({"fusec_graph": 1, INPUT, "nodes": [{"name": "s", "op": "sin",
          "inputs": ["x", "x"], "outputs": ["y"]}], "outputs": ["y"]})",
       "arity.json: node 's': error: 'sin' takes 1 input but 2 were given"},
      {"undefined value", "undef.json",
       R"({"fusec_graph": 1, INPUT, "nodes": [{"name": "a", "op": "add",
          "inputs": ["x", "q"], "outputs": ["y"]}], "outputs": ["y"]})",
       "undef.json: node 'a': error: input 'q' is not defined"},
      {"cycle", "cycle.json",
       R"({"fusec_graph": 1, INPUT, "nodes": [
          {"name": "a", "op": "add", "inputs": ["x", "t"], "outputs": ["u"]},
          {"name": "b", "op": "neg", "inputs": ["u"], "outputs": ["t"]}],
          "outputs": ["t"]})",
       "node is part of a cycle"},
      {"dtype mismatch", "dtype.json",
       R"({"fusec_graph": 1, "inputs": [
          {"name": "x", "dtype": "f32", "shape": [3]},
          {"name": "i", "dtype": "i64", "shape": [3]}],
          "nodes": [{"name": "m", "op": "max", "inputs": ["x", "i"],
          "outputs": ["y"]}], "outputs": ["y"]})",
       "dtype.json: node 'm': error: 'fuse.max' operands have different "
       "dtypes: f32 and i64"},
      {"escaping constant file", "escape.json",
       R"({"fusec_graph": 1, INPUT, "constants": [{"name": "w",
          "dtype": "f32", "shape": [3], "file": "../../w.bin"}],
          "nodes": [], "outputs": ["w"]})",
       "escape.json: constant 'w': error: constant file '../../w.bin' may "
       "not leave the model's directory"},
  };
  for (const Case &c : cases) {
    INFO(c.label);
    std::string model = c.model;
    size_t at = model.find("INPUT");
    if (at != std::string::npos)
      model.replace(at, 5, kGoodInput);
    CliResult result = runFusec("'" + writeModel(dir, c.file, model) + "'");
    CHECK(result.exitCode == 1);
    CHECK_THAT(result.output, Contains(c.expected));
    CHECK_THAT(result.output, !Contains("Assertion"));
  }
}

TEST_CASE("usage errors exit 2 and good runs exit 0", "[cli]") {
  std::string dir = test::freshTempDir("cli-usage");
  std::string model = writeUnaryModel(dir, "neg.json", "neg");
  CliResult unknown = runFusec("'" + model + "' --frobnicate");
  CHECK(unknown.exitCode == 2);
  CHECK_THAT(unknown.output, Contains("unknown option '--frobnicate'"));
  CliResult missing = runFusec("'" + dir + "/nope.json'");
  CHECK(missing.exitCode == 1);
  CHECK_THAT(missing.output, Contains("nope.json: error: cannot open model"));
  CliResult inputs = runFusec("'" + model + "' --run --inputs a.npy b.npy");
  CHECK(inputs.exitCode == 1);
  CHECK_THAT(inputs.output, Contains("takes 1 inputs but 2 .npy files"));
  CliResult good = runFusec("'" + model + "' --target=cpu --run --check");
  CHECK(good.exitCode == 0);
  CHECK_THAT(good.output, Contains("check y: max_abs_err=0"));
}

TEST_CASE("a CUDA run without a usable GPU exits 1 with the reason, never "
          "a crash",
          "[cli]") {
  FUSEC_SKIP_IF(cuda::unavailableReason().empty()
                    ? std::string("this machine has a usable GPU")
                    : std::string());
  std::string dir = test::freshTempDir("cli-no-gpu");
  std::string model = writeUnaryModel(dir, "sin.json", "sin");
  // The process used to exit while NVRTC's background warm-up compile ran
  // and crash in it (exit 139, about one run in five).
  for (int attempt = 0; attempt < 8; ++attempt) {
    CliResult result = runFusec("'" + model + "' --target=cuda --run");
    INFO(result.output);
    CHECK(result.exitCode == 1);
    CHECK_THAT(result.output,
               Catch::Contains("the CUDA target is unavailable"));
  }
}
