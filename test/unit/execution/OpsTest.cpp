//===- OpsTest.cpp - Every op x dtype against the scalar reference -------===//
//
// For each dtype, one graph applies every op of the table that accepts it
// (plus select) to random inputs; each output is compared with the table's
// reference implementation evaluated here in double/int64 precision, over
// shapes of size 1, odd sizes, a size large enough for the parallel loop,
// and broadcasting (including rank 0).
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
using test::kSpecialFloats;
using test::specialInts;

namespace {

struct ShapeCase {
  const char *label;
  Shape lhs, rhs;
};

const ShapeCase kShapeCases[] = {
    {"size 1", {1}, {1}},
    {"odd 7x13", {7, 13}, {7, 13}},
    {"large odd 70001 (parallel loop)", {70001}, {70001}},
    {"broadcast 3x1x5 with 4x5", {3, 1, 5}, {4, 5}},
    {"broadcast rank 0 with 5x7", {}, {5, 7}},
    {"broadcast 6x1 with 1x9", {6, 1}, {1, 9}},
};

/// Input ranges per domain: transcendental ops see a few periods, ints stay
/// small enough that i8 products wrap only sometimes.
std::pair<double, double> inputRange(DType dtype, fuse::InputDomain domain) {
  bool positive = domain != fuse::InputDomain::Real;
  if (isFloat(dtype)) {
    switch (domain) {
    case fuse::InputDomain::Real:
      return {-3.0, 3.0};
    case fuse::InputDomain::Positive:
      return {0.25, 3.0};
    case fuse::InputDomain::Unit:
      return {-0.95, 0.95};
    case fuse::InputDomain::AboveOne:
      return {1.0, 4.0};
    }
  }
  if (isUnsigned(dtype)) // no negatives: every op's reals are its naturals
    return positive ? std::make_pair(1.0, 50.0) : std::make_pair(0.0, 100.0);
  return positive ? std::make_pair(1.0, 50.0) : std::make_pair(-50.0, 50.0);
}

const fuse::InputDomain kDomains[] = {
    fuse::InputDomain::Real, fuse::InputDomain::Positive,
    fuse::InputDomain::Unit, fuse::InputDomain::AboveOne};

struct Expected {
  std::string value;
  Tensor reference;
};

/// The table's reference for `info` on (a, b), broadcast to the result
/// shape; integers exactly in int64 (wrapped to the dtype), floats in f64.
Tensor referenceResult(const fuse::ElementwiseOpInfo &info, const Tensor &a,
                       const Tensor *b) {
  Shape shape = b ? *broadcastShapes(a.shape, b->shape) : a.shape;
  Tensor result(info.resultDType(a.dtype), shape);
  BroadcastIndexer indexA(a.shape, shape);
  std::optional<BroadcastIndexer> indexB;
  if (b)
    indexB.emplace(b->shape, shape);
  for (int64_t i = 0; i < result.numElements(); ++i) {
    if (!isFloat(a.dtype)) {
      ref::setInt(result, i,
                  info.refInt(ref::intAt(a, indexA(i)),
                              b ? ref::intAt(*b, (*indexB)(i)) : 0));
      continue;
    }
    result.set(i, info.reference(a.dtype, a.at(indexA(i)),
                                 b ? b->at((*indexB)(i)) : 0.0));
  }
  return result;
}

} // namespace

void test::checkAllOps(DType dtype, Target target) {
  for (const ShapeCase &shapes : kShapeCases) {
    INFO("dtype " << dtypeName(dtype) << ", shapes " << shapes.label);
    std::mt19937_64 rng(42);
    GraphBuilder builder(std::string("ops_") + dtypeName(dtype));
    std::vector<Tensor> inputs;
    auto addInput = [&](const std::string &name, DType type, const Shape &shape,
                        std::pair<double, double> range) {
      inputs.push_back(
          randomTensor(type, shape, rng, range.first, range.second));
      return builder.input(name, type, shape);
    };
    // One pair of inputs per domain: x0/y0 on the reals, x1/y1 positive,
    // x2/y2 in (-1, 1), x3/y3 above 1.
    std::map<fuse::InputDomain, std::pair<std::string, std::string>> names;
    for (fuse::InputDomain domain : kDomains) {
      std::string suffix = std::to_string(static_cast<int>(domain));
      auto range = inputRange(dtype, domain);
      names[domain] = {addInput("x" + suffix, dtype, shapes.lhs, range),
                       addInput("y" + suffix, dtype, shapes.rhs, range)};
    }
    std::string x = names[fuse::InputDomain::Real].first,
                y = names[fuse::InputDomain::Real].second;
    std::string cond = addInput("cond", DType::I1, shapes.rhs, {0, 1});
    const Tensor &tx = inputs[0], &ty = inputs[1], &tcond = inputs.back();
    auto inputOf = [&](fuse::InputDomain domain,
                       int operand) -> const Tensor & {
      return inputs[2 * static_cast<int>(domain) + operand];
    };

    std::vector<std::pair<std::string, Tensor>> expected;
    for (const fuse::ElementwiseOpInfo &info : fuse::elementwiseOps()) {
      if (!info.accepts(dtype))
        continue;
      const Tensor &a = inputOf(info.domain, 0);
      const Tensor &b = inputOf(info.domain, 1);
      auto [lhs, rhs] = names[info.domain];
      std::string out = info.arity == 1 ? builder.op(info.mnemonic, {lhs})
                                        : builder.op(info.mnemonic, {lhs, rhs});
      builder.output(out);
      expected.emplace_back(
          info.mnemonic,
          referenceResult(info, a, info.arity == 2 ? &b : nullptr));
    }
    // select(cond, x, y): cond broadcasts with both.
    builder.output(builder.op("select", {cond, x, y}));
    {
      Shape shape = *broadcastShapes(tx.shape, ty.shape);
      Tensor reference(dtype, shape);
      BroadcastIndexer ix(tx.shape, shape), iy(ty.shape, shape),
          ic(tcond.shape, shape);
      for (int64_t i = 0; i < reference.numElements(); ++i)
        reference.set(i, tcond.at(ic(i)) != 0 ? tx.at(ix(i)) : ty.at(iy(i)));
      expected.emplace_back("select", std::move(reference));
    }

    if (target == Target::Cpu)
      test::compileForGpus(builder.build());
    for (bool fuse : {true, false}) {
      INFO((fuse ? "fused" : "unfused") << " on " << targetName(target));
      CompiledModel model =
          compile(builder.build(), test::testOptions(fuse, target));
      std::vector<Tensor> outputs = model.run(inputs);
      REQUIRE(outputs.size() == expected.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        INFO("op " << expected[i].first);
        REQUIRE(outputs[i].shape == expected[i].second.shape);
        REQUIRE(outputs[i].dtype == expected[i].second.dtype);
        Comparison comparison = compareTensors(outputs[i], expected[i].second);
        INFO(
            test::describeMismatch(outputs[i], expected[i].second, comparison));
        CHECK(comparison.ok());
      }
    }
  }
}

TEST_CASE("every op on f64 matches the reference", "[ops]") {
  test::checkAllOps(DType::F64, Target::Cpu);
}
TEST_CASE("every op on f32 matches the reference", "[ops]") {
  test::checkAllOps(DType::F32, Target::Cpu);
}
TEST_CASE("every op on f16 matches the reference", "[ops]") {
  test::checkAllOps(DType::F16, Target::Cpu);
}
TEST_CASE("every op on bf16 matches the reference", "[ops]") {
  test::checkAllOps(DType::BF16, Target::Cpu);
}
TEST_CASE("every op on i8 matches the reference", "[ops]") {
  test::checkAllOps(DType::I8, Target::Cpu);
}
TEST_CASE("every op on i32 matches the reference", "[ops]") {
  test::checkAllOps(DType::I32, Target::Cpu);
}
TEST_CASE("every op on i64 matches the reference", "[ops]") {
  test::checkAllOps(DType::I64, Target::Cpu);
}
TEST_CASE("every op on i16 matches the reference", "[ops]") {
  test::checkAllOps(DType::I16, Target::Cpu);
}
TEST_CASE("every op on u8 matches the reference", "[ops]") {
  test::checkAllOps(DType::U8, Target::Cpu);
}
TEST_CASE("every op on u16 matches the reference", "[ops]") {
  test::checkAllOps(DType::U16, Target::Cpu);
}
TEST_CASE("every op on u32 matches the reference", "[ops]") {
  test::checkAllOps(DType::U32, Target::Cpu);
}
TEST_CASE("every op on u64 matches the reference", "[ops]") {
  test::checkAllOps(DType::U64, Target::Cpu);
}
TEST_CASE("every op on i1 matches the reference", "[ops]") {
  test::checkAllOps(DType::I1, Target::Cpu);
}

TEST_CASE("cast converts between every pair of dtypes", "[ops]") {
  for (const DType *from = allDTypesBegin(); from != allDTypesEnd(); ++from) {
    INFO("from " << dtypeName(*from));
    std::mt19937_64 rng(7);
    auto range = inputRange(*from, fuse::InputDomain::Real);
    Tensor input = randomTensor(*from, {3, 37}, rng, range.first, range.second);
    GraphBuilder builder("casts");
    std::string x = builder.input("x", *from, {3, 37});
    std::vector<Tensor> expected;
    for (const DType *to = allDTypesBegin(); to != allDTypesEnd(); ++to) {
      builder.output(
          builder.op("cast", {x}, {{"dtype", std::string(dtypeName(*to))}}));
      Tensor reference(*to, input.shape);
      for (int64_t i = 0; i < input.numElements(); ++i) {
        double value = input.at(i);
        // Float to int truncates toward zero, and saturates (to 0 for a
        // negative float to an unsigned int) except into the 4- and 2-bit
        // integers, which wrap (as ONNX's reference does); anything to i1
        // is x != 0.
        if (isFloat(*from) && isInteger(*to))
          value = isUnsigned(*to) && value < 0 && !isNarrow(*to)
                      ? 0
                      : std::trunc(value);
        reference.set(i, value);
      }
      expected.push_back(std::move(reference));
    }
    test::compileForGpus(builder.build());
    std::vector<Tensor> outputs =
        compile(builder.build(), test::testOptions()).run({input});
    for (size_t i = 0; i < outputs.size(); ++i) {
      INFO("to " << dtypeName(expected[i].dtype));
      Comparison comparison = compareTensors(outputs[i], expected[i]);
      INFO(test::describeMismatch(outputs[i], expected[i], comparison));
      CHECK(comparison.ok());
    }
  }
}

TEST_CASE("max and min and relu propagate NaN from either operand", "[ops]") {
  // ONNX follows NumPy's maximum/minimum: NaN wins on either side, fused
  // or not, and however the canonicalizer orders commutative operands.
  const double nan = std::nan("");
  for (bool fuse : {true, false}) {
    INFO((fuse ? "fused" : "unfused"));
    GraphBuilder b("nan");
    std::string x = b.input("x", DType::F32, {4});
    std::string y = b.input("y", DType::F32, {4});
    b.output(b.op("max", {x, y}));
    b.output(b.op("min", {x, y}));
    b.output(b.op("max", {y, x}));
    b.output(b.op("relu", {x}));
    Tensor xs(DType::F32, {4}), ys(DType::F32, {4});
    const double xValues[] = {nan, 1.0, -2.0, nan};
    const double yValues[] = {1.0, nan, 3.0, nan};
    for (int i = 0; i < 4; ++i) {
      xs.set(i, xValues[i]);
      ys.set(i, yValues[i]);
    }
    std::vector<Tensor> outputs =
        compile(b.build(), test::testOptions(fuse)).run({xs, ys});
    for (size_t o = 0; o < 3; ++o) {
      INFO("output " << o);
      CHECK(std::isnan(outputs[o].at(0)));
      CHECK(std::isnan(outputs[o].at(1)));
      CHECK(std::isnan(outputs[o].at(3)));
    }
    CHECK(outputs[0].at(2) == 3.0);
    CHECK(outputs[1].at(2) == -2.0);
    CHECK(std::isnan(outputs[3].at(0)));
    CHECK(outputs[3].at(1) == 1.0);
    CHECK(outputs[3].at(2) == 0.0);
  }
}

namespace {

/// Every row of the table that accepts `dtype`, on every (a, b) pair of
/// `values` (a outer product: a in the rows, b in the columns), fused and
/// unfused, against the table's reference. Zeros must also match in sign.
void checkRowsOnValues(DType dtype, const std::vector<double> &values,
                       const std::vector<int64_t> &ints,
                       Target target = Target::Cpu) {
  bool isFloatType = isFloat(dtype);
  int64_t n = isFloatType ? values.size() : ints.size();
  Tensor a(dtype, {n, 1}), b(dtype, {1, n});
  for (int64_t i = 0; i < n; ++i) {
    if (isFloatType) {
      a.set(i, values[i]);
      b.set(i, values[i]);
    } else {
      ref::setInt(a, i, ints[i]);
      ref::setInt(b, i, ints[i]);
    }
  }
  GraphBuilder builder(std::string("specials_") + dtypeName(dtype));
  std::string x = builder.input("a", dtype, {n, 1});
  std::string y = builder.input("b", dtype, {1, n});
  std::vector<std::pair<std::string, Tensor>> expected;
  for (const fuse::ElementwiseOpInfo &info : fuse::elementwiseOps()) {
    if (!info.accepts(dtype))
      continue;
    builder.output(info.arity == 1 ? builder.op(info.mnemonic, {x})
                                   : builder.op(info.mnemonic, {x, y}));
    expected.emplace_back(
        info.mnemonic,
        referenceResult(info, a, info.arity == 2 ? &b : nullptr));
  }
  if (target == Target::Cpu)
    test::compileForGpus(builder.build());
  for (bool fuse : {true, false}) {
    INFO((fuse ? "fused" : "unfused") << " on " << targetName(target));
    std::vector<Tensor> outputs =
        compile(builder.build(), test::testOptions(fuse, target)).run({a, b});
    REQUIRE(outputs.size() == expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      INFO("op " << expected[i].first);
      const Tensor &got = outputs[i], &want = expected[i].second;
      Comparison comparison = compareTensors(got, want);
      INFO(test::describeMismatch(got, want, comparison));
      CHECK(comparison.ok());
      if (!isFloat(got.dtype))
        continue;
      for (int64_t e = 0; e < got.numElements(); ++e)
        if (want.at(e) == 0 && got.at(e) == 0 &&
            std::signbit(want.at(e)) != std::signbit(got.at(e)))
          FAIL_CHECK("element " << e << ": got " << got.at(e) << ", expected "
                                << want.at(e) << " (the sign of zero)");
    }
  }
}

} // namespace

TEST_CASE("every float op on NaN infinities signed zeros and ties", "[ops]") {
  for (DType dtype : {DType::F32, DType::F64}) {
    INFO("dtype " << dtypeName(dtype));
    checkRowsOnValues(dtype,
                      std::vector<double>(std::begin(kSpecialFloats),
                                          std::end(kSpecialFloats)),
                      {});
  }
}

TEST_CASE("every integer op on zero and -1 divisors and the extremes",
          "[ops]") {
  // Division and remainder by 0 and INT_MIN / -1 (which traps on x86) give
  // the documented results, never a trap; pow with negative exponents.
  for (DType dtype : {DType::I8, DType::I32, DType::I64}) {
    INFO("dtype " << dtypeName(dtype));
    checkRowsOnValues(dtype, {}, specialInts(dtype));
  }
}

TEST_CASE("every op on special values matches the reference on the GPU",
          "[gpu]") {
  // The same results as the CPU's: no integer division traps or differs.
  FUSEC_SKIP_IF(cuda::unavailableReason());
  for (DType dtype : {DType::F32, DType::F64}) {
    INFO("dtype " << dtypeName(dtype));
    checkRowsOnValues(dtype,
                      std::vector<double>(std::begin(kSpecialFloats),
                                          std::end(kSpecialFloats)),
                      {}, Target::Cuda);
  }
  for (DType dtype : {DType::I8, DType::I32, DType::I64}) {
    INFO("dtype " << dtypeName(dtype));
    checkRowsOnValues(dtype, {}, specialInts(dtype), Target::Cuda);
  }
}

namespace {

/// One output per listed case: the op's result on `x` and the expected
/// tensor written down by hand (ONNX's and NumPy's documented values).
struct LiteralCase {
  const char *op;
  std::vector<double> x, y, expected;
};

} // namespace

TEST_CASE("new ops give ONNX's and NumPy's documented values", "[ops]") {
  const double nan = NAN, inf = INFINITY;
  const LiteralCase cases[] = {
      {"round",
       {2.5, -0.5, 0.5, 1.5, -2.5, 2.4, -2.6, nan, -inf},
       {},
       {2.0, -0.0, 0.0, 2.0, -2.0, 2.0, -3.0, nan, -inf}},
      {"sign", {-0.0, 0.0, -3.5, 2.0, nan, -inf}, {}, {0, 0, -1, 1, nan, -1}},
      {"atanh", {1, -1, 2, 0}, {}, {inf, -inf, nan, 0}},
      {"acosh", {0.5, 1, -1}, {}, {nan, 0, nan}},
      {"asin", {1.5, 1, -1}, {}, {nan, M_PI / 2, -M_PI / 2}},
      {"isnan", {nan, inf, 0, -1}, {}, {1, 0, 0, 0}},
      {"mod",
       {5, -5, 5, -5, 0, -0.0, 3, -3, 1},
       {3, 3, -3, -3, -2, 2, inf, inf, 0},
       {2, 1, -1, -2, -0.0, 0.0, 3, inf, nan}},
      {"fmod",
       {5, -5, 5, -5, 1, inf},
       {3, 3, -3, -3, 0, 2},
       {2, -2, 2, -2, nan, nan}},
      {"softplus",
       {0, 100, -100, inf, -inf},
       {},
       {M_LN2, 100, std::exp(-100.0), inf, 0}},
      // alpha is float(1/6) in every dtype, as HardSwish's function body
      // passes it to HardSigmoid as a float attribute.
      {"hard_swish",
       {-3, 3, 0, 1, -inf},
       {},
       {-0.0, 3, 0, 1.0 * (double(1.0f / 6) + 0.5), nan}},
      {"softsign", {1, -3, inf}, {}, {0.5, -0.75, nan}},
  };
  for (const LiteralCase &c : cases) {
    INFO("op " << c.op);
    int64_t n = c.x.size();
    GraphBuilder builder("literal");
    std::vector<Tensor> inputs;
    std::vector<std::string> names;
    for (const std::vector<double> *values : {&c.x, &c.y}) {
      if (values->empty())
        continue;
      Tensor t(DType::F64, {n});
      for (int64_t i = 0; i < n; ++i)
        t.set(i, (*values)[i]);
      names.push_back(
          builder.input("in" + std::to_string(names.size()), DType::F64, {n}));
      inputs.push_back(std::move(t));
    }
    builder.output(builder.op(c.op, names));
    Tensor got = compile(builder.build(), test::testOptions()).run(inputs)[0];
    for (int64_t i = 0; i < n; ++i) {
      INFO("element " << i << ": got " << got.at(i) << ", expected "
                      << c.expected[i]);
      double want = c.expected[i], value = got.at(i);
      if (std::isnan(want)) {
        CHECK(std::isnan(value));
        continue;
      }
      CHECK((value == want ||
             std::fabs(value - want) <= 1e-12 * std::fabs(want)));
      CHECK(std::signbit(value) == std::signbit(want));
    }
  }
}

TEST_CASE("integer div mod fmod pow and shifts give the documented results",
          "[ops]") {
  struct IntCase {
    const char *op;
    DType dtype;
    std::vector<int64_t> x, y, expected;
  };
  const int64_t i32min = INT32_MIN, i64min = INT64_MIN;
  const IntCase cases[] = {
      // Truncation; x / 0 is 0; INT_MIN / -1 wraps to INT_MIN.
      {"div",
       DType::I32,
       {7, -7, 7, 5, i32min, i32min},
       {2, 2, 0, -1, -1, 1},
       {3, -3, 0, -5, i32min, i32min}},
      {"div", DType::I64, {i64min, -9, 9}, {-1, 0, -4}, {i64min, 0, -2}},
      {"div", DType::I8, {-128, -128, 100}, {-1, 0, 7}, {-128, 0, 14}},
      // The divisor's sign; x % 0 and INT_MIN % -1 are 0.
      {"mod",
       DType::I32,
       {5, -5, 5, -5, 7, i32min, 6},
       {3, 3, -3, -3, 0, -1, 3},
       {2, 1, -1, -2, 0, 0, 0}},
      {"mod", DType::I64, {i64min, i64min, -1}, {-1, 3, i64min}, {0, 1, -1}},
      // The dividend's sign.
      {"fmod",
       DType::I32,
       {5, -5, 5, -5, 7, i32min},
       {3, 3, -3, -3, 0, -1},
       {2, -2, 2, -2, 0, 0}},
      {"fmod", DType::I8, {-128, -128, 127}, {-1, 0, -2}, {0, 0, 1}},
      // Exact and wrapping; negative exponents truncate 1 / x^n.
      {"pow",
       DType::I64,
       {3, 2, 2, -2, 1, -1, -1, 0, 5, 0},
       {39, 63, 64, 63, -5, -3, -4, -1, 0, 0},
       {4052555153018976267, i64min, 0, i64min, 1, -1, 1, 0, 1, 1}},
      {"pow", DType::I32, {3, 2, -3}, {21, 31, 3}, {1870418611, i32min, -27}},
      {"pow", DType::I8, {3, 2}, {5, 7}, {-13, -128}},
      {"bitwise_and", DType::I32, {12, -1}, {10, i32min}, {8, i32min}},
      {"bitwise_or", DType::I8, {12, -128}, {3, 1}, {15, -127}},
      {"bitwise_xor", DType::I64, {12, -1}, {10, 0}, {6, -1}},
      // +, - and * wrap, also where C++ would overflow (signed) or promote
      // u16 * u16 to int and overflow there.
      {"mul", DType::U16, {65535, 300, 256}, {65535, 300, 256}, {1, 24464, 0}},
      {"mul", DType::I16, {-32768, 300}, {-1, 300}, {-32768, 24464}},
      {"mul",
       DType::I32,
       {INT32_MAX, i32min, 65536},
       {2, -1, 65536},
       {-2, i32min, 0}},
      {"add", DType::I32, {INT32_MAX, i32min}, {1, -1}, {i32min, INT32_MAX}},
      {"sub", DType::I64, {i64min, INT64_MAX}, {1, -1}, {INT64_MAX, i64min}},
      {"mul", DType::U32, {4294967295, 65536}, {4294967295, 65536}, {1, 0}},
      // Unsigned: only 0 is a special divisor; 255 is not -1.
      {"div", DType::U8, {200, 200, 255}, {0, 255, 2}, {0, 0, 127}},
      {"mod", DType::U32, {7, 4294967295}, {0, 10}, {0, 5}},
      {"fmod", DType::U16, {65535, 9}, {65535, 4}, {0, 1}},
      {"pow", DType::U8, {3, 2}, {5, 9}, {243, 0}},
      {"max", DType::U64, {1, 5}, {i64min, 4}, {i64min, 5}}, // 2^63 > 1
      // BitShift (NumPy's values): past the width shifts everything out;
      // signed right shifts fill with the sign.
      {"shift_left", DType::U8, {1, 255, 3}, {7, 1, 8}, {128, 254, 0}},
      {"shift_right", DType::U8, {128, 255, 200}, {7, 1, 9}, {1, 127, 0}},
      {"shift_right", DType::I8, {-128, -8, 100}, {7, 10, 2}, {-1, -1, 25}},
      {"shift_left", DType::I32, {1, -1, 5}, {31, 40, -1}, {i32min, 0, 0}},
      {"shift_left", DType::U64, {1, 3}, {63, 64}, {i64min, 0}},
      {"shift_right", DType::U64, {i64min, 1}, {63, 1}, {1, 0}},
  };
  for (const IntCase &c : cases) {
    INFO("op " << c.op << " on " << dtypeName(c.dtype));
    int64_t n = c.x.size();
    Tensor x(c.dtype, {n}), y(c.dtype, {n});
    for (int64_t i = 0; i < n; ++i) {
      ref::setInt(x, i, c.x[i]);
      ref::setInt(y, i, c.y[i]);
    }
    GraphBuilder builder("ints");
    builder.output(builder.op(c.op, {builder.input("x", c.dtype, {n}),
                                     builder.input("y", c.dtype, {n})}));
    for (bool fuse : {true, false}) {
      Tensor got =
          compile(builder.build(), test::testOptions(fuse)).run({x, y})[0];
      for (int64_t i = 0; i < n; ++i) {
        INFO("element " << i);
        CHECK(ref::intAt(got, i) == c.expected[i]);
      }
    }
  }
}

namespace {

/// Sets a few elements of a float tensor to NaN, +-inf and -0.
void addSpecials(Tensor &t) {
  const double specials[] = {NAN, INFINITY, -INFINITY, -0.0};
  for (int64_t i = 0; i < 4 && i < t.numElements(); ++i)
    t.set(i * 7 % t.numElements(), specials[i]);
}

} // namespace

TEST_CASE("activations with attributes isinf and clip match the reference",
          "[ops]") {
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    INFO("dtype " << dtypeName(dtype));
    std::mt19937_64 rng(11);
    Tensor input = randomTensor(dtype, {5, 31}, rng, -4.0, 4.0);
    addSpecials(input);
    Tensor low = randomTensor(dtype, {31}, rng, -2.0, 0.0);
    Tensor high = randomTensor(dtype, {1, 1}, rng, 0.0, 2.0);
    GraphBuilder b("activations");
    std::string x = b.input("x", dtype, {5, 31});
    std::string lo = b.input("lo", dtype, {31});
    std::string hi = b.input("hi", dtype, {1, 1});
    std::vector<std::pair<std::string, Tensor>> expected;
    auto add = [&](const std::string &label, std::string value,
                   Tensor reference) {
      b.output(value);
      expected.emplace_back(label, std::move(reference));
    };
    add("leaky_relu", b.op("leaky_relu", {x}), ref::leakyRelu(input, 0.01));
    add("leaky_relu alpha", b.op("leaky_relu", {x}, {{"alpha", 0.25}}),
        ref::leakyRelu(input, 0.25));
    add("elu", b.op("elu", {x}), ref::elu(input, 1.0));
    add("elu alpha", b.op("elu", {x}, {{"alpha", 0.5}}), ref::elu(input, 0.5));
    add("selu", b.op("selu", {x}),
        ref::selu(input, 1.67326319217681884765625, 1.05070102214813232421875));
    add("selu attrs", b.op("selu", {x}, {{"alpha", 2.0}, {"gamma", 0.5}}),
        ref::selu(input, 2.0, 0.5));
    add("celu", b.op("celu", {x}), ref::celu(input, 1.0));
    add("celu alpha", b.op("celu", {x}, {{"alpha", 2.5}}),
        ref::celu(input, 2.5));
    add("hard_sigmoid", b.op("hard_sigmoid", {x}),
        ref::hardSigmoid(input, 0.2, 0.5));
    add("hard_sigmoid attrs",
        b.op("hard_sigmoid", {x}, {{"alpha", 0.5}, {"beta", 0.25}}),
        ref::hardSigmoid(input, 0.5, 0.25));
    add("shrink", b.op("shrink", {x}), ref::shrink(input, 0.0, 0.5));
    add("shrink attrs", b.op("shrink", {x}, {{"bias", 1.5}, {"lambd", 1.5}}),
        ref::shrink(input, 1.5, 1.5));
    add("isinf", b.op("isinf", {x}), ref::isInf(input, true, true));
    add("isinf positive", b.op("isinf", {x}, {{"detect_negative", int64_t(0)}}),
        ref::isInf(input, true, false));
    add("isinf negative", b.op("isinf", {x}, {{"detect_positive", int64_t(0)}}),
        ref::isInf(input, false, true));
    add("isinf neither",
        b.op(
            "isinf", {x},
            {{"detect_positive", int64_t(0)}, {"detect_negative", int64_t(0)}}),
        ref::isInf(input, false, false));
    add("clip", b.op("clip", {x, lo, hi}), ref::clip(input, &low, &high));
    add("clip min", b.op("clip", {x, lo}), ref::clip(input, &low, nullptr));
    add("clip max", b.op("clip", {x, "", hi}),
        ref::clip(input, nullptr, &high));
    add("clip none", b.op("clip", {x}), ref::clip(input, nullptr, nullptr));
    test::compileForGpus(b.build());
    for (bool fuse : {true, false}) {
      INFO((fuse ? "fused" : "unfused"));
      std::vector<Tensor> outputs =
          compile(b.build(), test::testOptions(fuse)).run({input, low, high});
      REQUIRE(outputs.size() == expected.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        INFO(expected[i].first);
        Comparison comparison = compareTensors(outputs[i], expected[i].second,
                                               toleranceFor(outputs[i].dtype));
        INFO(
            test::describeMismatch(outputs[i], expected[i].second, comparison));
        CHECK(comparison.ok());
      }
    }
  }
}

TEST_CASE("shrink and clip on integers match the reference", "[ops]") {
  for (DType dtype : {DType::I8, DType::I32, DType::I64}) {
    INFO("dtype " << dtypeName(dtype));
    std::mt19937_64 rng(5);
    Tensor input = randomTensor(dtype, {3, 17}, rng, -20, 20);
    Tensor low = randomTensor(dtype, {}, rng, -10, 0);
    Tensor high = randomTensor(dtype, {17}, rng, -5, 10);
    GraphBuilder b("int_activations");
    std::string x = b.input("x", dtype, {3, 17});
    std::string lo = b.input("lo", dtype, {});
    std::string hi = b.input("hi", dtype, {17});
    b.output(b.op("shrink", {x}, {{"bias", 2.5}, {"lambd", 3.0}}));
    b.output(b.op("shrink", {x}));
    b.output(b.op("clip", {x, lo, hi}));
    std::vector<Tensor> expected = {ref::shrink(input, 2.5, 3.0),
                                    ref::shrink(input, 0.0, 0.5),
                                    ref::clip(input, &low, &high)};
    test::compileForGpus(b.build());
    std::vector<Tensor> outputs =
        compile(b.build(), test::testOptions()).run({input, low, high});
    for (size_t i = 0; i < outputs.size(); ++i) {
      INFO("output " << i);
      Comparison comparison = compareTensors(outputs[i], expected[i]);
      INFO(test::describeMismatch(outputs[i], expected[i], comparison));
      CHECK(comparison.ok());
    }
  }
}

TEST_CASE("integer reduce_mean neither wraps its sum nor its count", "[ops]") {
  // 300 elements of 100: the sum (30000) and the count (300) fit no 8-bit
  // dtype, the mean (100) does; and rows of one 255 and 299 zeros, whose
  // exact mean 0.85 truncates to 0.
  for (DType dtype : {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32,
                      DType::U32, DType::I64, DType::U64}) {
    INFO("dtype " << dtypeName(dtype));
    GraphBuilder b("int_mean");
    std::string x = b.input("x", dtype, {2, 300});
    b.output(
        b.op("reduce_mean", {x},
             {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}}));
    Tensor input(dtype, {2, 300});
    for (int64_t i = 0; i < 300; ++i) {
      input.set(i, 100);
      input.set(300 + i, i == 7 && isUnsigned(dtype) ? 255 : 0);
    }
    Tensor expected(dtype, {2});
    expected.set(0, 100);
    expected.set(1, 0);
    for (bool fuse : {true, false}) {
      std::vector<Tensor> outputs =
          compile(b.build(), test::testOptions(fuse)).run({input});
      Comparison comparison = compareTensors(outputs[0], expected);
      INFO(test::describeMismatch(outputs[0], expected, comparison));
      CHECK(comparison.ok());
    }
  }
}
