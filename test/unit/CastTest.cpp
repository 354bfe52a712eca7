//===- CastTest.cpp - Casts round once and saturate, on both targets -----===//
//
// The expected values are worked out by hand from the rules in
// docs/semantics.md, not taken from the implementation:
// - a conversion to a float rounds once, to nearest even, from the exact
//   source value (f64 and integers do not round through f32 first);
// - a float converted to an integer truncates toward zero, saturates to
//   the dtype's range, and NaN becomes 0.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace fusec;

namespace {

struct CastCase {
  DType from, to;
  double input;
  double expected; ///< NaN: the result is NaN
};

void checkCasts(Target target) {
  const double nan = std::nan(""), inf = INFINITY;
  const double i64Max = 9223372036854775807.0; // 2^63, as a double
  const std::vector<CastCase> cases = {
      // f64 -> f16: just above the midpoint of 1 and 1 + 2^-10. Through f32
      // the 2^-40 is lost, the value is the midpoint and rounds to 1.
      {DType::F64, DType::F16, 1 + std::ldexp(1, -11) + std::ldexp(1, -40),
       1 + std::ldexp(1, -10)},
      {DType::F64, DType::F16, -1 - std::ldexp(1, -11) - std::ldexp(1, -40),
       -1 - std::ldexp(1, -10)},
      {DType::F64, DType::F16, 1 + std::ldexp(1, -11), 1}, // a tie: even
      {DType::F64, DType::F16, 65519.99, 65504},
      {DType::F64, DType::F16, 65520, inf}, // the tie with 2^16 rounds up
      {DType::F64, DType::F16, 1e300, inf},
      {DType::F64, DType::F16, -1e-300, -0.0},
      // f64 -> bf16, the same just above the midpoint of 1 and 1 + 2^-7.
      {DType::F64, DType::BF16, 1 + std::ldexp(1, -8) + std::ldexp(1, -40),
       1 + std::ldexp(1, -7)},
      {DType::F64, DType::BF16, 1e300, inf},
      {DType::F64, DType::BF16, nan, nan},
      // i32 -> bf16: 2^24 + 2^16 + 1 is above the midpoint of 2^24 and
      // 2^24 + 2^17. Through f32 it becomes the midpoint and rounds to 2^24.
      {DType::I32, DType::BF16, 16842753, 16908288},
      {DType::I64, DType::BF16, 16842753, 16908288},
      // float -> int: toward zero, saturated, NaN -> 0.
      {DType::F32, DType::I32, 2.75, 2},
      {DType::F32, DType::I32, -2.75, -2},
      {DType::F32, DType::I32, 3e9, 2147483647},
      {DType::F32, DType::I32, -3e9, -2147483648.0},
      {DType::F32, DType::I32, inf, 2147483647},
      {DType::F32, DType::I32, -inf, -2147483648.0},
      {DType::F32, DType::I32, nan, 0},
      {DType::F32, DType::I8, 300.75, 127},
      {DType::F32, DType::I8, -300.75, -128},
      {DType::F32, DType::I8, -128.75, -128},
      {DType::F64, DType::I64, 1e20, i64Max},
      {DType::F64, DType::I64, -1e20, -i64Max},
      {DType::F64, DType::I64, nan, 0},
      {DType::F16, DType::I8, 1000, 127},
      {DType::BF16, DType::I32, -std::ldexp(1, 100), -2147483648.0},
      {DType::F32, DType::I16, 40000.5, 32767},
      {DType::F32, DType::I16, -40000.5, -32768},
      // Unsigned: [0, 2^n - 1], negatives to 0.
      {DType::F32, DType::U8, 300.75, 255},
      {DType::F32, DType::U8, 254.75, 254},
      {DType::F32, DType::U8, -5.5, 0},
      {DType::F32, DType::U8, -0.75, 0},
      {DType::F32, DType::U8, nan, 0},
      {DType::F32, DType::U16, 70000, 65535},
      {DType::F32, DType::U32, 4294967296.0, 4294967295.0},
      {DType::F32, DType::U32, 4294967040.0, 4294967040.0},
      {DType::F64, DType::U32, 4294967295.5, 4294967295.0},
      {DType::F64, DType::U32, -inf, 0},
      {DType::F64, DType::U64, 1e20, 18446744073709551615.0},
      {DType::F64, DType::U64, 9007199254740993.0 * 1024,
       9007199254740992.0 * 1024},
      {DType::F64, DType::U64, -1e20, 0},
      {DType::F16, DType::U8, 1000, 255},
      // Integers to unsigned wrap (C's and NumPy's conversion).
      {DType::I32, DType::U8, -1, 255},
      {DType::I64, DType::U32, -2, 4294967294.0},
      {DType::U8, DType::I8, 200, -56},
      {DType::U32, DType::F32, 4294967295.0, 4294967296.0},
  };
  for (const CastCase &c : cases) {
    INFO(dtypeName(c.from) << " " << c.input << " -> " << dtypeName(c.to));
    for (bool fuse : {true, false}) {
      INFO((fuse ? "fused" : "unfused"));
      GraphBuilder b("cast");
      std::string x = b.input("x", c.from, {1});
      b.output(b.op("cast", {x}, {{"dtype", std::string(dtypeName(c.to))}}));
      Tensor input(c.from, {1});
      input.set(0, c.input);
      if (!std::isnan(c.input))
        REQUIRE(input.at(0) == c.input); // exact in the source dtype
      std::vector<Tensor> outputs =
          compile(b.build(), test::testOptions(fuse, target)).run({input});
      REQUIRE(outputs.size() == 1);
      double got = outputs[0].at(0);
      if (std::isnan(c.expected)) {
        CHECK(std::isnan(got));
      } else {
        CHECK(got == c.expected);
        CHECK(std::signbit(got) == std::signbit(c.expected));
      }
    }
  }
}

} // namespace

TEST_CASE("casts round once and saturate floats converted to ints", "[ops]") {
  checkCasts(Target::Cpu);
}

TEST_CASE("casts round once and saturate floats converted to ints on the GPU",
          "[ops][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkCasts(Target::Cuda);
}
