//===- FuzzRegressionTest.cpp - What the fuzz harnesses found ------------===//
//
// Each case is an input a harness in test/fuzz found (or its minimized
// form), now a plain test: the loader must report a fusec::Error, quickly
// and without allocating what the file merely declares. Declared sizes are
// checked against the bytes present before memory is allocated.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "frontends/Onnx.h"
#include "runtime/Package.h"
#include "runtime/core/Error.h"
#include "runtime/core/Npy.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <sys/stat.h>
#include <thread>

using namespace fusec;

namespace {

std::string writeFile(const std::string &dir, const std::string &name,
                      const std::string &bytes) {
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

/// A version 1.0 .npy file: magic, header length, header, data.
std::string npyBytes(const std::string &header, const std::string &data) {
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + data;
}

/// The fusec::Error `load` throws; fails the test if it throws nothing or
/// anything else, or takes more than a second (nothing huge was allocated).
template <typename Load> std::string errorOf(Load load) {
  auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    load();
    FAIL("no error was reported");
  } catch (const Error &error) {
    message = error.what();
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  return message;
}

} // namespace

TEST_CASE("npy dims that are not integers are an error", "[fuzz]") {
  // fuzz-npy: std::stoll threw std::invalid_argument out of readNpy.
  std::string dir = test::freshTempDir("fuzz-npy");
  std::string path = writeFile(
      dir, "w3.npy",
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0,W3), }\n",
               ""));
  CHECK_THAT(errorOf([&] { readNpy(path); }),
             Catch::Contains("dims must be non-negative integers"));
  for (const char *shape : {"(-1,)", "(99999999999999999999,)", "(2 3,)"}) {
    path = writeFile(dir, "bad.npy",
                     npyBytes(std::string("{'descr': '<f4', 'fortran_order': "
                                          "False, 'shape': ") +
                                  shape + ", }\n",
                              ""));
    CHECK_THAT(errorOf([&] { readNpy(path); }),
               Catch::Contains("dims must be non-negative integers"));
  }
}

TEST_CASE("npy sizes are checked before allocating", "[fuzz]") {
  std::string dir = test::freshTempDir("fuzz-npy");
  // A huge shape with three floats: rejected without allocating 400 GB.
  std::string path = writeFile(
      dir, "huge.npy",
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, "
               "1000000), }\n",
               std::string(12, '\0')));
  CHECK_THAT(errorOf([&] { readNpy(path); }),
             Catch::Contains("truncated .npy data: expected 400000000000 bytes "
                             "for f32[100000x1000000] but the file holds 12"));
  // More elements than any index computation can take.
  path = writeFile(dir, "overflow.npy",
                   npyBytes("{'descr': '<f8', 'fortran_order': False, "
                            "'shape': (4294967296, 4294967296), }\n",
                            ""));
  CHECK_THAT(errorOf([&] { readNpy(path); }),
             Catch::Contains("has more than 2^48 elements"));
  // A version 2.0 header that declares 4 GB.
  path = writeFile(dir, "header.npy",
                   std::string("\x93NUMPY\x02\0\xff\xff\xff\xff{}", 14));
  CHECK_THAT(errorOf([&] { readNpy(path); }),
             Catch::Contains("truncated .npy header"));
  // An exact file still reads.
  path = writeFile(dir, "ok.npy",
                   npyBytes("{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (3,), }\n",
                            std::string(12, '\0')));
  CHECK(readNpy(path).typeString() == "f32[3]");
}

TEST_CASE("an empty ONNX tensor with raw_data reads", "[fuzz]") {
  // fuzz-onnx-tensor (a seed from the ONNX test data): memcpy from an empty
  // raw_data into an empty tensor passed a null pointer (UBSan).
  std::string dir = test::freshTempDir("fuzz-onnx");
  // dims [0, 3, 4], FLOAT, name "data", raw_data "".
  std::string path =
      writeFile(dir, "empty.pb",
                std::string("\x08\x00\x08\x03\x08\x04\x10\x01\x42\x04"
                            "data\x4a\x00",
                            16));
  CHECK(readTensorProtoFile(path).typeString() == "f32[0x3x4]");
}

TEST_CASE("ONNX external data is checked before allocating", "[fuzz]") {
  std::string dir = test::freshTempDir("fuzz-onnx");
  writeFile(dir, "w.bin", std::string(16, '\0'));
  // dims [2^20, 2^20], FLOAT, external_data {location: "w.bin"},
  // data_location EXTERNAL: 4 TB declared, 16 bytes present.
  std::string proto = std::string("\x08\x80\x80\x40\x08\x80\x80\x40\x10\x01"
                                  "\x6a\x11\x0a\x08location\x12\x05w.bin"
                                  "\x70\x01",
                                  31);
  std::string path = writeFile(dir, "huge.pb", proto);
  CHECK_THAT(errorOf([&] { readTensorProtoFile(path); }),
             Catch::Contains("does not hold the 4398046511104 bytes"));
}

TEST_CASE("npy inputs may come from a pipe", "[fuzz]") {
  // Sizes come from the bytes read, as a pipe has no size to ask for.
  std::string dir = test::freshTempDir("fuzz-npy");
  std::string path = dir + "/pipe.npy";
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  std::thread writer([&] {
    writeFile(dir, "pipe.npy",
              npyBytes("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2,), }\n",
                       std::string(8, '\0')));
  });
  CHECK(readNpy(path).typeString() == "f32[2]");
  writer.join();
}

TEST_CASE("a JSON constant file must be a regular file", "[fuzz]") {
  // fuzz-json: "file": "." opened the model's directory, whose size reads
  // as huge, so the whole 8 GB constant was allocated (82 s) before the
  // read failed.
  std::string dir = test::freshTempDir("fuzz-json");
  std::string path = writeFile(
      dir, "dir.json",
      R"({"fusec_graph": 1, "inputs": [{"name": "x", "dtype": "f32", "shape": [3]}],
 "constants": [{"name": "c", "dtype": "f32", "shape": [1000000, 2000], "file": "."}],
 "nodes": [{"name": "a", "op": "add", "inputs": ["x", "x"], "outputs": ["y"]}],
 "outputs": ["y"]})");
  CHECK_THAT(errorOf([&] { readJsonGraph(path); }),
             Catch::Contains("constant 'c': error: constant file '" + dir +
                             "/.' is not a file"));
}

TEST_CASE("an ONNX node without outputs is an error", "[fuzz]") {
  // fuzz-onnx: a nameless node with no outputs was named after output 0,
  // read past the end of the empty field (UBSan; a crash in release).
  std::string dir = test::freshTempDir("fuzz-onnx");
  // ir_version 7, graph {node {input: "x" input: "x" op_type: "Add"}
  // name: "g"}, opset_import {version: 13}.
  std::string path =
      writeFile(dir, "nooutput.onnx",
                std::string("\x08\x07\x3a\x10\x0a\x0b\x0a\x01x\x0a\x01x\x22"
                            "\x03"
                            "Add\x12\x01g\x42\x02\x10\x0d",
                            24));
  CHECK_THAT(errorOf([&] { readOnnxGraph(path); }),
             Catch::Contains("node #0 (Add, opset 13): error: Add has 2 "
                             "inputs and 0 outputs: too few"));
}

TEST_CASE("an ONNX LayerNormalization without inputs is an error", "[fuzz]") {
  // fuzz-onnx: asking for its Mean output read input 0 of a node with no
  // inputs: std::out_of_range escaped the loader (std::terminate).
  std::string dir = test::freshTempDir("fuzz-onnx");
  // graph {node {output: "y" output: "m" op_type: "LayerNormalization"}},
  // opset 17.
  std::string path =
      writeFile(dir, "layernorm.onnx",
                std::string("\x08\x07\x3a\x1f\x0a\x1a\x12\x01y\x12\x01m\x22\x12"
                            "LayerNormalization\x12\x01g\x42\x02\x10\x11",
                            39));
  CHECK_THAT(errorOf([&] { readOnnxGraph(path); }),
             Catch::Contains("LayerNormalization has 0 inputs and 2 outputs: "
                             "too few"));
}

TEST_CASE("a package whose program names a step, buffer or size it lacks is "
          "an error",
          "[fuzz]") {
  // fuzz-package: a step naming kernel 16777217 of 1 was read out of
  // range by the memory plan (a SEGV) before the executable checked its
  // steps; checkProgram now checks steps, library-call operands and the
  // buffers' total size. Each case is saved with valid checksums, so the
  // loader's own checks must catch it.
  std::string dir = test::freshTempDir("fuzz-package");
  std::string path = dir + "/model.fusec";
  compileFile(FUSEC_TEST_MODELS_DIR "/gemm_relu.json", test::testOptions())
      .save(path);
  auto errorAfter = [&](const std::function<void(Program &)> &damage) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    PackageContents contents = parsePackage(bytes, path);
    damage(contents.program);
    std::string damaged = dir + "/damaged.fusec";
    savePackage(contents.program, *contents.image, damaged);
    return errorOf([&] { load(damaged); });
  };
  CHECK_THAT(errorAfter([](Program &p) { p.steps[0].index = 16777217; }),
             Catch::Contains("damaged.fusec: error: the program: step 0 "
                             "names nothing it can run"));
  CHECK_THAT(errorAfter([](Program &p) { p.matmuls[0].output = -7; }),
             Catch::Contains("the program: matmul 0 names buffer -7 of"));
  CHECK_THAT(
      errorAfter([](Program &p) {
        // 40 buffers of 2^51 bytes each: each fits, together they do not.
        for (int i = 0; i < 40; ++i) {
          BufferDesc big;
          big.name = "big" + std::to_string(i);
          big.dtype = DType::F64;
          big.shape = {int64_t(1) << 48};
          p.buffers.push_back(big);
        }
      }),
      Catch::Contains("the program: its buffers hold more than 2^56 bytes"));
}
