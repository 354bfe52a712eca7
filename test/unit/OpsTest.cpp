//===- OpsTest.cpp - Every op x dtype against the scalar reference -------===//
//
// For each dtype, one graph applies every op of the table that accepts it
// (plus select) to random inputs; each output is compared with the table's
// reference implementation evaluated here in double/int64 precision, over
// shapes of size 1, odd sizes, a size large enough for the parallel loop,
// and broadcasting (including rank 0).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "ir/ElementwiseOps.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace fusec;

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
  bool positive = domain == fuse::InputDomain::Positive;
  if (isFloat(dtype))
    return positive ? std::make_pair(0.25, 3.0) : std::make_pair(-3.0, 3.0);
  return positive ? std::make_pair(1.0, 50.0) : std::make_pair(-50.0, 50.0);
}

struct Expected {
  std::string value;
  Tensor reference;
};

/// The table's reference for `info` on (a, b), broadcast to the result shape.
Tensor referenceResult(const fuse::ElementwiseOpInfo &info, const Tensor &a,
                       const Tensor *b) {
  Shape shape = b ? *broadcastShapes(a.shape, b->shape) : a.shape;
  Tensor result(info.resultDType(a.dtype), shape);
  BroadcastIndexer indexA(a.shape, shape);
  std::optional<BroadcastIndexer> indexB;
  if (b)
    indexB.emplace(b->shape, shape);
  for (int64_t i = 0; i < result.numElements(); ++i)
    result.set(i, info.reference(a.dtype, a.at(indexA(i)),
                                 b ? b->at((*indexB)(i)) : 0.0));
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
    auto real = inputRange(dtype, fuse::InputDomain::Real);
    auto positive = inputRange(dtype, fuse::InputDomain::Positive);
    std::string x = addInput("x", dtype, shapes.lhs, real);
    std::string y = addInput("y", dtype, shapes.rhs, real);
    std::string px = addInput("px", dtype, shapes.lhs, positive);
    std::string py = addInput("py", dtype, shapes.rhs, positive);
    std::string cond = addInput("cond", DType::I1, shapes.rhs, {0, 1});
    const Tensor &tx = inputs[0], &ty = inputs[1], &tpx = inputs[2],
                 &tpy = inputs[3], &tcond = inputs[4];

    std::vector<std::pair<std::string, Tensor>> expected;
    for (const fuse::ElementwiseOpInfo &info : fuse::elementwiseOps()) {
      if (!info.accepts(dtype))
        continue;
      bool positiveDomain = info.domain == fuse::InputDomain::Positive;
      const Tensor &a = positiveDomain ? tpx : tx;
      const Tensor &b = positiveDomain ? tpy : ty;
      std::string lhs = positiveDomain ? px : x, rhs = positiveDomain ? py : y;
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
        // Float to int truncates toward zero; anything to i1 is x != 0.
        if (isFloat(*from) && dtypeInfo(*to).kind == DTypeKind::Int)
          value = std::trunc(value);
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
