//===- MatmulErrorTest.cpp - Bad matmul and gemm operands ----------------===//
//
// Operands a matmul or gemm cannot take (8- and 16-bit integers, mismatched
// contracted dims, bad ranks and shapes) are errors naming the node.
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

TEST_CASE("a matmul of 8- or 16-bit integers is an error naming the node",
          "[matmul]") {
  for (DType dtype : {DType::I8, DType::U8, DType::I16}) {
    INFO(dtypeName(dtype));
    GraphBuilder b("int_matmul");
    std::string x = b.input("x", dtype, {2, 3});
    std::string w = b.input("w", dtype, {3, 4});
    b.output(b.op("matmul", {x, w})); // node "matmul_0"
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'matmul_0': error: ") &&
                          Contains(dtypeName(dtype)) && Contains("i32"));
  }
}

TEST_CASE("mismatched contracted dims are an error naming the node and both "
          "shapes",
          "[matmul]") {
  {
    GraphBuilder b("bad_k");
    std::string x = b.input("x", DType::F32, {2, 3});
    std::string w = b.input("w", DType::F32, {4, 5});
    b.output(b.op("matmul", {x, w}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'matmul_0': error: ") && Contains("2x3") &&
                          Contains("4x5"));
  }
  {
    GraphBuilder b("bad_vector");
    std::string x = b.input("x", DType::F32, {7});
    std::string w = b.input("w", DType::F32, {6});
    b.output(b.op("matmul", {x, w}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'matmul_0': error: ") && Contains("[7]") &&
                          Contains("[6]"));
  }
  {
    // transB makes B [5, 4]: k 3 vs 4.
    GraphBuilder b("bad_gemm");
    std::string x = b.input("x", DType::F32, {2, 3});
    std::string w = b.input("w", DType::F32, {3, 4});
    b.output(b.op("gemm", {x, w, ""}, {{"transB", int64_t(1)}}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'gemm_0': error: ") && Contains("2x3") &&
                          Contains("3x4"));
  }
  {
    GraphBuilder b("bad_batch");
    std::string x = b.input("x", DType::F32, {2, 3, 4});
    std::string w = b.input("w", DType::F32, {3, 4, 5});
    b.output(b.op("matmul", {x, w}));
    CHECK_THROWS_WITH(compile(b.build(), test::testOptions()),
                      Contains("node 'matmul_0': error: ") &&
                          Contains("broadcast"));
  }
}

TEST_CASE("bad matmul and gemm operands are errors naming the node",
          "[matmul]") {
  struct Bad {
    const char *label, *op;
    DType dtypeA, dtypeB;
    Shape a, b;
    std::optional<Shape> c;
    const char *expected;
  };
  const Bad cases[] = {
      {"rank 0 operand", "matmul", DType::F32, DType::F32, {}, {3}, {}, "rank"},
      {"mixed dtypes",
       "matmul",
       DType::F32,
       DType::F16,
       {2, 3},
       {3, 4},
       {},
       "dtype"},
      {"3-D gemm operand",
       "gemm",
       DType::F32,
       DType::F32,
       {2, 2, 3},
       {3, 4},
       {},
       "2-D"},
      {"gemm C that does not broadcast",
       "gemm",
       DType::F32,
       DType::F32,
       {2, 3},
       {3, 4},
       Shape{5},
       "broadcast"},
  };
  for (const Bad &bad : cases) {
    INFO(bad.label);
    GraphBuilder b("bad");
    std::vector<std::string> inputs = {b.input("a", bad.dtypeA, bad.a),
                                       b.input("b", bad.dtypeB, bad.b)};
    if (bad.c)
      inputs.push_back(b.input("c", bad.dtypeA, *bad.c));
    else if (std::string(bad.op) == "gemm")
      inputs.push_back(""); // C left out by name (two inputs crashed)
    b.output(b.op(bad.op, inputs));
    CHECK_THROWS_WITH(
        compile(b.build(), test::testOptions()),
        Contains("node '" + std::string(bad.op) + "_0': error: ") &&
            Contains(bad.expected));
  }
}
