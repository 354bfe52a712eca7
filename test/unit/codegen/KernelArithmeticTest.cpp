//===- KernelArithmeticTest.cpp - How printed kernels compute -----------===//
//
// What the generated kernels compute beyond each op's reference: the C++
// target's own f32 exp within 1 ulp, a multiply and a subtract rounded
// separately (no fma contraction), and f16/bf16 chains that round each op's
// result as the unfused ops do.
//
//===----------------------------------------------------------------------===//

#include "test/unit/ReferenceOps.h"
#include "test/unit/TestUtil.h"

#include "ir/ElementwiseOps.h"
#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>

using namespace fusec;

TEST_CASE("f32 exp is within 1 ulp of exp in f64 rounded to f32", "[ops]") {
  // The C++ target computes f32 exp itself (the prelude's fusec_expf, not
  // libm): over the whole range, the ends where it overflows and
  // underflows (subnormal results, then 0), and the special values, each
  // result within 1 ulp of exp in f64 rounded to f32, and NaN, +-inf, the
  // overflows and the zeros exact.
  std::vector<double> values = {
      NAN,    INFINITY,   -INFINITY, 0.0,       -0.0,        1e-30,
      -1e-30, 1.0,        -1.0,      88.72283f, 88.72284f,   89.0,
      89.5,   -87.33655f, -87.34f,   -103.0,    -103.97207f, -103.97208f,
      -104.0, -104.5,     -1000.0,   1000.0};
  for (int i = 0; i <= 200000; ++i)
    values.push_back(-110.0 + 205.0 * i / 200000);
  GraphBuilder b("exp");
  std::string x =
      b.input("x", DType::F32, {static_cast<int64_t>(values.size())});
  b.output(b.op("exp", {x}));
  Tensor xs(DType::F32, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    xs.set(i, values[i]);
  Tensor result = compile(b.build(), test::testOptions()).run({xs})[0];
  auto ordered = [](float f) {
    int32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits < 0 ? -int64_t(bits & 0x7fffffff) : int64_t(bits);
  };
  int64_t worst = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    float input = static_cast<float>(xs.at(i));
    float expected = static_cast<float>(std::exp(double(input)));
    float got = static_cast<float>(result.at(i));
    INFO("exp(" << input << "): got " << got << ", expected " << expected);
    if (std::isnan(expected) || std::isinf(expected) || expected == 0) {
      CHECK((std::isnan(expected) ? std::isnan(got) : got == expected));
      continue;
    }
    int64_t distance = std::llabs(ordered(got) - ordered(expected));
    worst = std::max(worst, distance);
    if (distance > 1)
      CHECK(distance <= 1);
  }
  CHECK(worst <= 1);
}

namespace {

/// x * y - w in one kernel rounds the product before the subtraction, as
/// ONNX's Mul and Sub do: where the rounded product equals w the result is
/// exactly 0; a contracted fma would return the product's rounding error.
void checkMultiplyAddRoundSeparately(Target target) {
  for (DType dtype : {DType::F32, DType::F64}) {
    // (1 + e)^2 = 1 + 2e + e^2 rounds to 1 + 2e (e^2 is half an ulp, and
    // 1 + 2e is the even neighbour).
    const double e =
        dtype == DType::F32 ? std::ldexp(1.0, -12) : std::ldexp(1.0, -27);
    const std::vector<double> x = {1 + e, 1 + e, 3, -(1 + e)};
    const std::vector<double> y = {1 + e, 1 - e, 5, 1 + e};
    const std::vector<double> w = {1 + 2 * e, 1, 15, -(1 + 2 * e)};
    // 1 - e^2 is a float; as a double it is a tie that rounds to 1.
    const double belowOne = dtype == DType::F32 ? -e * e : 0;
    const std::vector<double> expected = {0, belowOne, 0, 0};
    const int64_t count = static_cast<int64_t>(x.size());
    Tensor tx(dtype, {count}), ty(dtype, {count}), tw(dtype, {count});
    for (int64_t i = 0; i < count; ++i) {
      tx.set(i, x[i]);
      ty.set(i, y[i]);
      tw.set(i, w[i]);
    }
    for (bool fuse : {true, false}) {
      INFO(dtypeName(dtype) << (fuse ? " fused" : " unfused"));
      GraphBuilder b("multiply_subtract");
      std::string product = b.op(
          "mul", {b.input("x", dtype, {count}), b.input("y", dtype, {count})});
      b.output(b.op("sub", {product, b.input("w", dtype, {count})}));
      CompiledModel model = compile(b.build(), test::testOptions(fuse, target));
      if (fuse)
        CHECK(model.kernels().size() == 1);
      Tensor result = model.run({tx, ty, tw})[0];
      for (int64_t i = 0; i < count; ++i) {
        INFO("row " << i);
        CHECK(result.at(i) == expected[i]);
      }
    }
  }
}

} // namespace

TEST_CASE("a multiply and a subtract in one kernel round separately", "[ops]") {
  checkMultiplyAddRoundSeparately(Target::Cpu);
}

TEST_CASE("a multiply and a subtract in one kernel round separately on the "
          "GPU",
          "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkMultiplyAddRoundSeparately(Target::Cuda);
}

namespace {

/// ONNX computes each op's output in its tensor's dtype: a chain of f16 or
/// bf16 ops in one kernel (held in f32 there) rounds every result, so it
/// gives the unfused chain's numbers: sums that lose their small operand,
/// products that overflow f16 before a division or a log would bring them
/// back.
void checkLowPrecisionChainsRoundEachOp(Target target) {
  struct Chain {
    DType dtype;
    std::string label;
    std::vector<double> a, b;
    std::vector<double> expected;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Chain chains[] = {
      // (a + b) - a: 1 + 2^-12 and 2048 + 1 (a tie to even) round to a;
      // -65504 - 2 rounds to -65504, not past the largest f16.
      {DType::F16,
       "(a + b) - a",
       {1, 2048, -65504},
       {std::ldexp(1.0, -12), 1, -2},
       {0, 0, 0}},
      // (a * b) / b: 300 * 300 overflows f16.
      {DType::F16, "(a * b) / b", {300, 2}, {300, 3}, {inf, 2}},
      // log(exp(a)): exp(12) overflows f16.
      {DType::F16, "log(exp(a))", {12, 1}, {}, {inf, 1}},
      {DType::BF16,
       "(a + b) - a",
       {1, 256, -3},
       {std::ldexp(1.0, -9), 1, std::ldexp(1.0, -8)},
       {0, 0, 0}},
      // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 rounds to 1 + 2^-6 = b.
      {DType::BF16,
       "(a * a) - b",
       {1 + std::ldexp(1.0, -7)},
       {1 + std::ldexp(1.0, -6)},
       {0}},
  };
  for (const Chain &chain : chains)
    for (bool fuse : {true, false}) {
      INFO(dtypeName(chain.dtype)
           << " " << chain.label << (fuse ? " fused" : " unfused"));
      const int64_t count = static_cast<int64_t>(chain.a.size());
      GraphBuilder b("chain");
      std::string a = b.input("a", chain.dtype, {count});
      std::vector<Tensor> inputs = {Tensor(chain.dtype, {count})};
      for (int64_t i = 0; i < count; ++i)
        inputs[0].set(i, chain.a[i]);
      std::string other;
      if (!chain.b.empty()) {
        other = b.input("b", chain.dtype, {count});
        inputs.push_back(Tensor(chain.dtype, {count}));
        for (int64_t i = 0; i < count; ++i)
          inputs[1].set(i, chain.b[i]);
      }
      std::string y;
      if (chain.label == "(a + b) - a")
        y = b.op("sub", {b.op("add", {a, other}), a});
      else if (chain.label == "(a * b) / b")
        y = b.op("div", {b.op("mul", {a, other}), other});
      else if (chain.label == "log(exp(a))")
        y = b.op("log", {b.op("exp", {a})});
      else
        y = b.op("sub", {b.op("mul", {a, a}), other});
      b.output(y);
      CompiledModel model = compile(b.build(), test::testOptions(fuse, target));
      if (fuse)
        CHECK(model.kernels().size() == 1);
      Tensor result = model.run(inputs)[0];
      for (int64_t i = 0; i < count; ++i) {
        INFO("element " << i);
        CHECK(result.at(i) == chain.expected[i]);
      }
    }
}

} // namespace

TEST_CASE("f16 and bf16 chains in one kernel round each op's result", "[ops]") {
  checkLowPrecisionChainsRoundEachOp(Target::Cpu);
}

TEST_CASE("f16 and bf16 chains in one kernel round each op's result on the "
          "GPU",
          "[gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkLowPrecisionChainsRoundEachOp(Target::Cuda);
}
