//===- NarrowTypesTest.cpp - float8, float4, int4, int2 -------------------===//
//
// The reference here is written from the formats' definitions, apart from
// runtime/core/NarrowTypes.h's bit arithmetic: a code's value from its fields
// with ldexp, and a conversion as the nearest of all the format's values
// (a tie to the even code), then ONNX Cast's table for what lies past the
// largest finite value (saturate: that value; otherwise NaN, or E5M2's
// infinity). Kernels on both targets and the runtime's Tensor::set are
// checked against it.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "runtime/cuda/CudaApi.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace fusec;

namespace {

struct FloatFormat {
  DType dtype;
  int exponentBits, mantissaBits, bias;
  bool fnuz;   ///< NaN is the code 0x80 alone, no -0
  bool hasInf; ///< E5M2: IEEE's inf and NaN codes
};

const FloatFormat kFormats[] = {
    {DType::F8E4M3FN, 4, 3, 7, false, false},
    {DType::F8E4M3FNUZ, 4, 3, 8, true, false},
    {DType::F8E5M2, 5, 2, 15, false, true},
    {DType::F8E5M2FNUZ, 5, 2, 16, true, false},
    {DType::F4E2M1, 2, 1, 1, false, false},
};

int codeCount(const FloatFormat &f) {
  return 1 << (1 + f.exponentBits + f.mantissaBits);
}

/// The value of `code`, from the format's definition.
double valueOf(const FloatFormat &f, int code) {
  const int magnitudeBits = f.exponentBits + f.mantissaBits;
  const bool negative = (code >> magnitudeBits) & 1;
  const int magnitude = code & ((1 << magnitudeBits) - 1);
  const int exponent = magnitude >> f.mantissaBits;
  const int fraction = magnitude & ((1 << f.mantissaBits) - 1);
  const int maxExponent = (1 << f.exponentBits) - 1;
  if (f.fnuz && negative && magnitude == 0)
    return NAN;
  if (f.hasInf && exponent == maxExponent)
    return fraction == 0 ? (negative ? -INFINITY : INFINITY) : NAN;
  if (!f.fnuz && !f.hasInf && f.exponentBits == 4 &&
      magnitude == (1 << magnitudeBits) - 1)
    return NAN; // E4M3FN: S.1111.111
  double value = exponent == 0
                     ? std::ldexp(fraction, 1 - f.bias - f.mantissaBits)
                     : std::ldexp((1 << f.mantissaBits) + fraction,
                                  exponent - f.bias - f.mantissaBits);
  return negative ? -value : value;
}

/// ONNX Cast of `x` to the format, as a value (NaN for NaN).
double converted(const FloatFormat &f, double x, bool saturate) {
  if (std::isnan(x)) // float4 has no NaN: a zero of the other sign
    return f.dtype == DType::F4E2M1 ? (std::signbit(x) ? 0.0 : -0.0) : NAN;
  double largest = 0;
  for (int code = 0; code < codeCount(f); ++code)
    if (std::isfinite(valueOf(f, code)))
      largest = std::max(largest, valueOf(f, code));
  // The nearest finite value; of two, the even code.
  int best = -1;
  double bestDistance = INFINITY;
  for (int code = 0; code < codeCount(f); ++code) {
    double value = valueOf(f, code);
    if (!std::isfinite(value))
      continue;
    if (value == 0 && std::signbit(value) != std::signbit(x) && !f.fnuz)
      continue; // a zero keeps x's sign where the format has both
    double distance = std::fabs(value - x);
    if (distance < bestDistance ||
        (distance == bestDistance && (code & 1) == 0)) {
      best = code;
      bestDistance = distance;
    }
  }
  double nearest =
      std::isinf(x) ? std::copysign(INFINITY, x) : valueOf(f, best);
  // Past the largest value: rounded up beyond it (the next step of the
  // exponent's spacing would be nearer than the largest value).
  const double step = std::ldexp(1.0, std::ilogb(largest) - f.mantissaBits);
  const bool overflows = std::fabs(x) > largest + step / 2 ||
                         (std::fabs(x) == largest + step / 2 &&
                          (static_cast<int64_t>(largest / step) & 1)) ||
                         std::isinf(x);
  if (!overflows)
    return nearest;
  if (saturate || f.dtype == DType::F4E2M1)
    return std::copysign(largest, x);
  return f.hasInf ? std::copysign(INFINITY, x) : NAN;
}

bool sameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

/// Values around every one of the format's: itself, the midpoints to its
/// neighbours and just either side of them, past the range, specials.
std::vector<double> probeValues(const FloatFormat &f) {
  std::vector<double> values = {0.0,  -0.0,  NAN,   -NAN,   INFINITY, -INFINITY,
                                1e30, -1e30, 1e-30, -1e-30, 1e-45,    3.4e38};
  std::vector<double> finite;
  for (int code = 0; code < codeCount(f); ++code)
    if (std::isfinite(valueOf(f, code)))
      finite.push_back(valueOf(f, code));
  std::sort(finite.begin(), finite.end());
  for (size_t i = 0; i < finite.size(); ++i) {
    double v = finite[i];
    values.push_back(v);
    double next =
        i + 1 < finite.size() ? finite[i + 1] : v + (v - finite[i - 1]);
    double middle = (v + next) / 2;
    for (double probe : {middle, std::nextafter(middle, -INFINITY),
                         std::nextafter(middle, INFINITY)})
      values.push_back(probe);
  }
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> log2(-12, 18);
  for (int i = 0; i < 200; ++i) {
    double v = std::exp2(log2(rng));
    values.push_back(i % 2 ? -v : v);
  }
  // Through f32, as the kernels compute.
  for (double &v : values)
    v = static_cast<float>(v);
  return values;
}

void checkConversions(Target target) {
  for (const FloatFormat &f : kFormats) {
    INFO(dtypeName(f.dtype));
    std::vector<double> probes = probeValues(f);
    const int64_t n = probes.size();
    // Every code back to f32, and f32 values to the format both ways.
    Tensor codes(f.dtype, {codeCount(f)});
    for (int code = 0; code < codeCount(f); ++code)
      codes.bytes[code] = static_cast<uint8_t>(code);
    Tensor x(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i)
      x.set(i, probes[i]);
    for (bool fuse : {true, false}) {
      INFO((fuse ? "fused" : "unfused"));
      GraphBuilder b("narrow");
      std::string c = b.input("codes", f.dtype, {codeCount(f)});
      std::string v = b.input("x", DType::F32, {n});
      b.output(b.op("cast", {c}, {{"dtype", std::string("f32")}}));
      std::string dtype = dtypeName(f.dtype);
      b.output(b.op("cast", {v}, {{"dtype", dtype}}));
      b.output(b.op("cast", {v}, {{"dtype", dtype}, {"saturate", int64_t(0)}}));
      test::compileForGpus(b.build());
      std::vector<Tensor> out =
          compile(b.build(), test::testOptions(fuse, target)).run({codes, x});
      REQUIRE(out.size() == 3);
      for (int code = 0; code < codeCount(f); ++code) {
        INFO("code " << code);
        CHECK(sameValue(out[0].at(code), valueOf(f, code)));
      }
      for (int64_t i = 0; i < n; ++i) {
        INFO("x " << probes[i]);
        CHECK(sameValue(out[1].at(i), converted(f, probes[i], true)));
        CHECK(sameValue(out[2].at(i), converted(f, probes[i], false)));
      }
    }
    // The runtime's own conversion (constants, Tensor::set) saturates.
    if (target == Target::Cpu)
      for (double probe : probes) {
        INFO("set " << probe);
        Tensor t(f.dtype, {1});
        t.set(0, probe);
        CHECK(sameValue(t.at(0), converted(f, probe, true)));
      }
  }
}

/// Integers wrap into 4 and 2 bits; floats truncate first.
void checkNarrowIntegers(Target target) {
  const std::vector<double> inputs = {0,   1,    -1,  7,    8,   -8,
                                      -9,  15,   16,  17,   100, -100,
                                      2.5, -2.5, 3.9, -3.9, 1e3, -1e3};
  const int64_t n = inputs.size();
  for (DType to : {DType::I4, DType::U4, DType::I2, DType::U2}) {
    INFO(dtypeName(to));
    const int bits = dtypeInfo(to).bits;
    Tensor asFloat(DType::F32, {n}), asInt(DType::I32, {n});
    for (int64_t i = 0; i < n; ++i) {
      asFloat.set(i, inputs[i]);
      asInt.set(i, std::trunc(inputs[i]));
    }
    GraphBuilder b("narrow_ints");
    std::string f = b.input("f", DType::F32, {n});
    std::string k = b.input("k", DType::I32, {n});
    std::string name = dtypeName(to);
    std::string fromFloat = b.op("cast", {f}, {{"dtype", name}});
    b.output(fromFloat);
    b.output(b.op("cast", {k}, {{"dtype", name}}));
    // Back to i32: the stored value reads as its own number.
    b.output(b.op("cast", {fromFloat}, {{"dtype", std::string("i32")}}));
    test::compileForGpus(b.build());
    std::vector<Tensor> out =
        compile(b.build(), test::testOptions(true, target))
            .run({asFloat, asInt});
    for (int64_t i = 0; i < n; ++i) {
      INFO("input " << inputs[i]);
      int64_t whole = static_cast<int64_t>(std::trunc(inputs[i]));
      int64_t low = whole & ((int64_t(1) << bits) - 1);
      int64_t expected = isUnsigned(to) || low < (int64_t(1) << (bits - 1))
                             ? low
                             : low - (int64_t(1) << bits);
      CHECK(out[0].at(i) == expected);
      CHECK(out[1].at(i) == expected);
      CHECK(out[2].at(i) == expected);
    }
  }
}

/// ONNX Cast to float8 E8M0 (2^(code - 127)), from the definition of its
/// rounding modes in values: x's sign is ignored; |x| between 2^e and
/// 2^(e+1) goes up (unless it is 2^e), down, or to nearest (up from 1.5 *
/// 2^e); below the smallest normal f32 the code is 0 and any nonzero value
/// goes up (nearest: above 2^-127). Past 2^127 it saturates or is NaN.
double e8m0Reference(double x, int mode, bool saturate) {
  if (!std::isfinite(x))
    return NAN;
  const double a = std::fabs(static_cast<float>(x));
  const double smallest = std::ldexp(1.0, -126);
  int code;
  bool up;
  if (a < smallest) {
    code = 0;
    const double half = std::ldexp(1.0, -127);
    up = mode == 0 ? a != 0 : mode == 2 ? a > half : false;
  } else {
    int e = std::ilogb(a);
    code = e + 127;
    double power = std::ldexp(1.0, e);
    up = mode == 0 ? a != power : mode == 2 ? a >= 1.5 * power : false;
  }
  if (up && !(saturate && code == 254))
    ++code;
  if (code == 255)
    return NAN;
  return std::ldexp(1.0, code - 127);
}

void checkE8M0(Target target) {
  std::vector<double> values = {0.0,  -0.0, 1.0,    -2.0,     1.25,  1.5,
                                1.75, 3.0,  0.375,  1e-30,    1e-39, 1e-44,
                                3e38, 2e38, 1.7e38, INFINITY, NAN,   65504};
  for (int k = -130; k <= 127; k += 7)
    for (double m : {1.0, 1.2, 1.5, 1.9})
      values.push_back(std::ldexp(m, k));
  const int64_t n = values.size();
  Tensor x(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i)
    x.set(i, values[i]);
  const char *modes[] = {"up", "down", "nearest"};
  GraphBuilder b("e8m0");
  std::string v = b.input("x", DType::F32, {n});
  for (const char *mode : modes)
    for (int64_t saturate : {1, 0})
      b.output(b.op("cast",
                    {b.op("cast", {v},
                          {{"dtype", std::string("f8E8M0FNU")},
                           {"round_mode", std::string(mode)},
                           {"saturate", saturate}})},
                    {{"dtype", std::string("f32")}}));
  test::compileForGpus(b.build());
  std::vector<Tensor> out =
      compile(b.build(), test::testOptions(true, target)).run({x});
  REQUIRE(out.size() == 6);
  for (int m = 0; m < 3; ++m)
    for (int saturate : {1, 0}) {
      INFO(modes[m] << (saturate ? ", saturating" : ""));
      const Tensor &got = out[m * 2 + (saturate ? 0 : 1)];
      for (int64_t i = 0; i < n; ++i) {
        INFO("x " << values[i]);
        CHECK(sameValue(got.at(i), e8m0Reference(values[i], m, saturate)));
      }
    }
}

} // namespace

TEST_CASE("float8 and float4 convert as ONNX Cast defines", "[ops]") {
  checkConversions(Target::Cpu);
}

TEST_CASE("float8 and float4 convert as ONNX Cast defines on the GPU",
          "[ops][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkConversions(Target::Cuda);
}

TEST_CASE("4- and 2-bit integers wrap", "[ops]") {
  checkNarrowIntegers(Target::Cpu);
}

TEST_CASE("4- and 2-bit integers wrap on the GPU", "[ops][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkNarrowIntegers(Target::Cuda);
}

TEST_CASE("narrow dtypes move through layout ops and select exactly", "[ops]") {
  // Transpose, concat, slice and select of float8 codes keep every code,
  // NaNs and -0 included.
  const int64_t rows = 16, columns = 16;
  Tensor codes(DType::F8E4M3FN, {rows, columns});
  for (int64_t i = 0; i < rows * columns; ++i)
    codes.bytes[i] = static_cast<uint8_t>(i);
  GraphBuilder b("narrow_moves");
  std::string x = b.input("x", DType::F8E4M3FN, {rows, columns});
  std::string t =
      b.op("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}});
  b.output(t);
  b.output(b.op("concat", {x, t}, {{"axis", int64_t(0)}}));
  std::string nonNegative =
      b.op("ge", {b.op("cast", {x}, {{"dtype", std::string("f32")}}),
                  b.constant("zero", Tensor(DType::F32, {}))});
  b.output(b.op("select", {nonNegative, x, t}));
  test::compileForGpus(b.build());
  std::vector<Tensor> out =
      compile(b.build(), test::testOptions()).run({codes});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c) {
      uint8_t at = codes.bytes[r * columns + c];
      uint8_t transposed = codes.bytes[c * columns + r];
      CHECK(out[0].bytes[r * columns + c] == transposed);
      CHECK(out[1].bytes[r * columns + c] == at);
      CHECK(out[1].bytes[(rows + r) * columns + c] == transposed);
      double value = codes.at(r * columns + c);
      CHECK(out[2].bytes[r * columns + c] == (value >= 0 ? at : transposed));
    }
}

TEST_CASE("float8 E8M0 rounds by round_mode", "[ops]") {
  checkE8M0(Target::Cpu);
}

TEST_CASE("float8 E8M0 rounds by round_mode on the GPU", "[ops][gpu]") {
  FUSEC_SKIP_IF(cuda::unavailableReason());
  checkE8M0(Target::Cuda);
}

TEST_CASE("a cast moved behind a broadcast keeps its saturation and rounding",
          "[ops]") {
  // fuse-make-broadcasts-explicit repeats a cast per element after the
  // broadcast it feeds: the repeated cast must convert the same way.
  GraphBuilder b("broadcast_cast");
  std::string x = b.input("x", DType::F32, {4});
  std::string pick = b.input("pick", DType::I1, {3, 4});
  std::string other = b.input("other", DType::F32, {3, 4});
  auto selected = [&](const std::string &dtype, const std::string &attr,
                      AttrValue value) {
    std::string narrow =
        b.op("cast", {x}, {{"dtype", dtype}, {attr, std::move(value)}});
    std::string fallback = b.op("cast", {other}, {{"dtype", dtype}});
    return b.op("cast", {b.op("select", {pick, narrow, fallback})},
                {{"dtype", std::string("f32")}});
  };
  b.output(selected("f8E4M3FN", "saturate", int64_t(0)));
  b.output(selected("f8E8M0FNU", "round_mode", std::string("down")));
  Tensor xs(DType::F32, {4}), picks(DType::I1, {3, 4}),
      others(DType::F32, {3, 4});
  const double values[] = {1000, 3, -1e6, 0.3};
  for (int i = 0; i < 4; ++i)
    xs.set(i, values[i]);
  for (int i = 0; i < 12; ++i)
    picks.set(i, 1);
  for (bool fuse : {true, false}) {
    INFO((fuse ? "fused" : "unfused"));
    std::vector<Tensor> out =
        compile(b.build(), test::testOptions(fuse)).run({xs, picks, others});
    for (int row = 0; row < 3; ++row) {
      CHECK(std::isnan(out[0].at(row * 4 + 0))); // past 448, not saturated
      CHECK(out[0].at(row * 4 + 1) == 3);
      CHECK(std::isnan(out[0].at(row * 4 + 2)));
      CHECK(out[1].at(row * 4 + 0) == 512); // 1000 rounded down
      CHECK(out[1].at(row * 4 + 1) == 2);
      CHECK(out[1].at(row * 4 + 3) == 0.25);
    }
  }
}
